"""File loading: reading and parsing the repo's files, and model errors as ``file:line:col`` problems."""

from __future__ import annotations

import difflib
import re
import types
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from ..api.kinds import KINDS, ResourceKind, by_collection
from ..api.resource import ID_RE, Resource
from ..core.checks import suggest, unknown_field_advice
from ..core.yamlfile import Document, Path_, load_text, read_text
from ..errors import Problem
from ..models import TOOL_TYPES
from . import parallel

__all__ = [
    "CONFIG_FILE",
    "IGNORE_KEY",
    "SourceFile",
    "cross_checks",
    "declared_owners",
    "display_path",
    "error_owner",
    "kind_files",
    "load_sources",
    "misplaced_files",
    "parse_file",
    "pydantic_problem",
    "type_name",
    "validate_model",
]

CONFIG_FILE = "cesync.yaml"


IGNORE_KEY = "ignoreChanges"  # a resource file's own fields left to the console (core.ignore); not the API's


@dataclass
class SourceFile:
    kind: ResourceKind
    id: str
    path: Path
    doc: Document
    ignore: tuple[str, ...] = ()  # the file's ignoreChanges

    @property
    def key(self) -> tuple[str, str]:
        """(kind name, id), as :attr:`cesync.api.resource.Resource.key`."""
        return (self.kind.name, self.id)


def load_sources(root: Path, problems: list[Problem], unreadable: set[tuple[str, str]] | None = None) -> list[SourceFile]:
    """Every resource file of every kind (``<collection>/*.yaml``), parsed; problems appended.

    unreadable gets (kind, id) of each file that has a problem of its own, by its file name: a
    reference to it is then not a second problem (one tab in an agent's file said also that
    every file naming the agent named nothing)."""
    files: list[SourceFile] = []
    broken = unreadable if unreadable is not None else set()
    seen: dict[tuple[str, str], str] = {}
    listed = [(kind, path) for kind in KINDS.values() for path in kind_files(root, kind)]
    # each folder resolved once (one resolve was most of reading a file)
    folders = {parent: parent.resolve() for parent in dict.fromkeys(path.parent for _, path in listed)}
    parsed = parallel.run([path for _, path in listed], partial(_parse_files, root, folders))
    for (kind, path), (doc, found) in zip(listed, parsed, strict=True):
        problems += found
        if not kind.singleton:
            broken.add((kind.name, path.stem))  # taken out again below once the file is read
        if doc is None:
            continue
        if not isinstance(doc.data, dict):
            article = "an" if kind.name[0] in "aeiou" else "a"
            problems.append(doc.problem((), f"{article} {kind} file must be a mapping of fields, not {type_name(doc.data)}"))
            continue
        if kind.singleton and "id" in doc.data:
            message = f"the {kind}'s id is each environment's '{kind}:' in cesync.yaml, not part of {path.name}"
            problems.append(doc.problem(("id",), message, key=True))
            continue
        ignore = doc.data.pop(IGNORE_KEY, [])
        if not isinstance(ignore, list) or not all(isinstance(x, str) and x for x in ignore):
            problems.append(doc.problem((IGNORE_KEY,), f"{IGNORE_KEY} must be a list of field paths (e.g. [description])"))
            ignore = []
        rid = kind.name if kind.singleton else doc.data.pop("id", path.stem)
        if not isinstance(rid, str) or not ID_RE.match(rid):
            problems.append(doc.problem(("id",), f"invalid {kind} id {rid!r}: use letters, digits, '-' and '_' (at most 128)"))
            continue
        if (kind.name, rid) in seen:
            problems.append(doc.problem(("id",), f"duplicate {kind} id '{rid}' (also defined in {seen[(kind.name, rid)]})"))
            continue
        seen[(kind.name, rid)] = doc.file
        broken.discard((kind.name, path.stem))
        files.append(SourceFile(kind, rid, path, doc, tuple(ignore)))
    return files


def declared_owners(files: Iterable[SourceFile]) -> dict[str, tuple[str, str]]:
    """ "kind/id" -> (file, owner) of each {ref: COLLECTION/ID, owner: NAME} in the repo's files (as
    written: templating resolves the name and checks only the ref's shape)."""
    found: dict[str, tuple[str, str]] = {}
    for f in files:
        text = f.doc.text
        # "owner" reaches the data only as written, or through an escape: a text with neither declares none
        if text and "owner" not in text and "\\" not in text:
            continue
        stack = [f.doc.data]
        while stack:
            item = stack.pop()
            if isinstance(item, dict) and set(item) == {"ref", "owner"} and isinstance(item["ref"], str):
                collection, _, rid = item["ref"].partition("/")
                if (kind := by_collection(collection)) is not None and isinstance(item["owner"], str):
                    found.setdefault(f"{kind.name}/{rid}", (f.doc.file, item["owner"]))
            elif isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
    return found


def _parse_files(root: Path, folders: dict[Path, Path], paths: list[Path]) -> list[tuple[Document | None, list[Problem]]]:
    """Each file parsed, and its problems."""
    out: list[tuple[Document | None, list[Problem]]] = []
    for path in paths:
        found: list[Problem] = []
        out.append((parse_file(path, root, found, folder=folders[path.parent]), found))
    return out


def misplaced_files(root: Path) -> list[Problem]:
    """A folder of YAML files whose name is close to a kind's folder (``tool/``, ``Agents/``):
    cesync reads only the kinds' own folders, so those files would silently not be part of the
    app. A warning, not an error: any folder may hold YAML (an OpenAPI document to include)."""
    folders = [k.folder for k in KINDS.values() if not k.singleton]
    found: list[Problem] = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if folder.name in folders:
            continue
        lower = {f.lower(): f for f in folders}
        close = lower.get(folder.name.lower()) or next(iter(difflib.get_close_matches(folder.name, folders, 1, 0.8)), None)
        yamls = sorted(p.name for p in folder.glob("*.y*ml") if p.suffix in (".yaml", ".yml"))
        if close and (root / close).is_dir() and (root / close).samefile(folder):
            continue  # a file system that ignores case reads 'Agents/' as 'agents/'
        if close and yamls:
            files = "its YAML file is" if len(yamls) == 1 else f"its {len(yamls)} YAML files are"
            found.append(
                Problem(
                    f"{folder.name}/{yamls[0]}",
                    1,
                    1,
                    f"cesync reads no folder '{folder.name}/', so {files} not part of the app; "
                    f"did you mean '{close}/'? (move them there)",
                )
            )
    return found


def kind_files(root: Path, kind: ResourceKind) -> list[Path]:
    """The repo files of one kind: <folder>/*.yaml, or app.yaml (.yml) at the top for the app."""
    if kind.singleton:
        return [p for p in (root / f"{kind.name}.yaml", root / f"{kind.name}.yml") if p.is_file()]
    folder = root / kind.folder
    found = sorted(folder.glob("*.y*ml"), key=lambda p: p.name) if folder.is_dir() else []  # one folder: as by path
    return [p for p in found if p.suffix in (".yaml", ".yml") and not p.name.startswith(".")]


def parse_file(path: Path, root: Path, problems: list[Problem], *, folder: Path | None = None) -> Document | None:
    """folder: path.parent resolved (see yamlfile.read_text)."""
    display = display_path(path, root)
    text = read_text(path, display, root=root, folder=folder)
    if isinstance(text, Problem):
        problems.append(text)
        return None
    doc = load_text(text, display)
    if isinstance(doc, Problem):
        problems.append(doc)
        return None
    return doc


def display_path(path: Path, root: Path) -> str:
    text, top = str(path), str(root)
    if text.startswith(top) and text[len(top) : len(top) + 1] == "/" and top != "/":
        return text[len(top) + 1 :]  # what relative_to says, without its parse of both (once per file and include)
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def type_name(value: Any) -> str:
    named = {dict: "a mapping", list: "a list", str: "a string", type(None): "empty", bool: "true or false"}
    return named.get(type(value)) or (f"the number {value}" if isinstance(value, int | float) else type(value).__name__)


# What a field of each type takes, in the words of the files (pydantic's own names its classes:
# "a valid dictionary or instance of LlmAgent").
_MUST_BE = {
    "string_type": "must be text",
    "int_type": "must be a whole number",
    "float_type": "must be a number",
    "bool_type": "must be true or false",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "list_type": "must be a list",
}


def validate_model(model: type[BaseModel], data: Any, doc: Document) -> tuple[Any, list[Problem]]:
    try:
        return model.model_validate(data), []
    except ValidationError as exc:
        errors = exc.errors()
        # A misspelt key ('enviroments') explains the required field it misses: one problem, not two.
        meant = set()
        for err in errors:
            loc = clean_loc(err)
            if err["type"] == "extra_forbidden":
                close = difflib.get_close_matches(str(loc[-1]), keys_at(model, loc[:-1]), n=3, cutoff=0.6)
                meant |= {(*loc[:-1], c) for c in close}
        errors = [e for e in errors if not (e["type"] == "missing" and clean_loc(e) in meant)]
        return None, [pydantic_problem(err, doc, model=model) for err in errors]


def keys_at(model: type[BaseModel], loc: Path_) -> list[str]:
    """The keys a mapping at loc of a ``model`` document may have ([] when loc is not a model's):
    walked through the fields' types (optional, dict values, list items)."""
    tp: Any = model
    for step in loc:
        tp = _inner(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel) and isinstance(step, str):
            info = next((f for n, f in tp.model_fields.items() if (f.alias or n) == step), None)
            if info is None:
                return []
            tp = info.annotation
        elif get_origin(tp) in (dict, list):
            tp = get_args(tp)[-1]
        else:
            return []
    tp = _inner(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [f.alias or n for n, f in tp.model_fields.items()]
    return []


def _inner(tp: Any) -> Any:
    """Optional[X] and Annotated[X, ...] as X."""
    while True:
        if get_origin(tp) is Annotated:
            tp = get_args(tp)[0]
        elif get_origin(tp) in (Union, types.UnionType):
            args = [a for a in get_args(tp) if a is not type(None)]
            if len(args) != 1:
                return tp
            tp = args[0]
        else:
            return tp


def pydantic_problem(err: Any, doc: Document, offset: Path_ = (), model: type[BaseModel] | None = None) -> Problem:
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and (p.startswith("function-") or p in ("str", "int"))))
    path = (*offset, *loc)
    dotted = ".".join(str(p) for p in loc)
    if err["type"] == "missing":
        return doc.problem(
            path[:-1],
            f"missing required field '{loc[-1]}'" + (f" in {'.'.join(str(p) for p in loc[:-1])}" if len(loc) > 1 else ""),
            key=True,
        )
    if err["type"] == "extra_forbidden":
        hint = suggest(str(loc[-1]), keys_at(model, loc[:-1])) if model is not None else ""
        return doc.problem(path, f"unknown field '{loc[-1]}'{hint}", key=True)
    msg = err["msg"].removeprefix("Value error, ")  # pydantic's prefix for a validator's ValueError says nothing
    if err["type"] == "required_empty":  # the API reads "", 0 or the enum's 0 of a required field as unset
        return doc.problem(path, f"{dotted or loc[-1]} is required and must not be {err['ctx']['empty']}")
    if err["type"] == "literal_error":
        return doc.problem(path, f"{dotted}: {_enum_message(err)}" if dotted else _enum_message(err))
    if err["type"] in ("string_type", "int_type", "bool_type", "float_type", "dict_type", "list_type", "model_type"):
        # What the file holds there, not what templating made of it: a {ref: ...} mapping is a
        # string by the time the model reads it, and "got a string" sent people looking for one.
        written = _written(doc.data, path)
        value = written if written is not _ABSENT else err.get("input")
        given = type_name(value)
        msg = _MUST_BE[err["type"]]
        if err["type"] == "list_type" and isinstance(written, dict) and set(written) == {"ref"}:
            given = f"one {{ref: {written['ref']}}}; write it as a list item, [{{ref: {written['ref']}}}]"
        elif err["type"] == "string_type" and isinstance(value, bool | int | float):
            given += f"; quote it to keep it as text: '{str(value).lower() if isinstance(value, bool) else value}'"
        elif err["type"] == "bool_type" and isinstance(value, str):
            given += f" '{value}'; write true or false (YAML 1.2 reads yes, no, on and off as text)"
        msg = f"{msg} (got {given})"
    return doc.problem(path, f"{dotted}: {msg}" if dotted else msg)


_ABSENT = object()


def _written(data: Any, path: Path_) -> Any:
    """The value at path of a file's data as written, or _ABSENT."""
    for step in path:
        held = (isinstance(data, dict) and step in data) or (
            isinstance(data, list) and isinstance(step, int) and 0 <= step < len(data)
        )
        if not held:
            return _ABSENT
        data = data[step]
    return data


def clean_loc(err: Any) -> Path_:
    return tuple(p for p in err["loc"] if not (isinstance(p, str) and (p.startswith("function-") or p in ("str", "int"))))


def error_owner(err: Any) -> Path_:
    """The mapping a missing-field error is about."""
    loc = clean_loc(err)
    return loc if err["type"] == "oneof_missing" else loc[:-1]


def _enum_message(err: Any) -> str:
    """What was given, what is allowed, and the closest allowed value."""
    expected = str(err.get("ctx", {}).get("expected", ""))
    # pydantic quotes string literals ("'A' or 'B'") but not numbers ("1"), as for cesync.yaml's version.
    allowed = re.findall(r"'([^']*)'", expected) or [s for s in re.split(r",\s*|\s+or\s+", expected) if s]
    given = err.get("input")
    close = difflib.get_close_matches(str(given).upper(), allowed, n=1, cutoff=0.4) if isinstance(given, str) else []
    hint = f"; did you mean '{close[0]}'?" if close else ""
    # a close spelling, or the start of one value (SYNC for SYNCHRONOUS): a typo, not a newer value
    sure = isinstance(given, str) and (
        difflib.get_close_matches(given.upper(), allowed, n=1, cutoff=0.8)
        or (len(given) >= 3 and len([a for a in allowed if a.startswith(given.upper())]) == 1)
    )
    newer = ""
    if not sure and isinstance(given, str) and re.fullmatch(r"[A-Z][A-Z0-9_]*", given):
        newer = f"; {unknown_field_advice()}"  # written like a value of the API's: perhaps newer than cesync
    shown = ", ".join(allowed) if len(allowed) <= 12 else ", ".join(allowed[:12]) + ", ..."
    return f"{given!r} is not a valid value{hint} (one of: {shown}){newer}"


def cross_checks(resources: list[Resource], files: list[SourceFile]) -> list[Problem]:
    """Tool names (the type's `name`) must be unique in an app."""
    docs = {f.key: f.doc for f in files}
    problems: list[Problem] = []
    names: dict[str, str] = {}
    for r in resources:
        if not r.kind.named_by_type:
            continue
        type_field = next(iter(k for k in r.body if isinstance(r.body[k], dict) and k in TOOL_TYPES), None)
        if type_field is None:
            continue
        name = r.body[type_field].get("name")
        doc = docs[r.key]
        if name:
            if name in names:
                problems.append(
                    doc.problem((type_field, "name"), f"duplicate tool name '{name}' (also used by tool '{names[name]}')")
                )
            else:
                names[name] = r.id
    return problems
