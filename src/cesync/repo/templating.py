"""Templating: what turns a file's data into a body for one environment.

``${NAME}`` variables, ``{file: path}`` includes (and mapping-form schemas),
``{ref: kind/id}`` references, and CES's ``$env_var`` server placeholder.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path
from typing import Any

from .. import yamlconfig
from ..api import behaviour as fb
from ..api.kinds import DRAFT_VERSION, by_collection, ref_collections
from ..api.resource import ID_RE
from ..api.words import spoken
from ..core.checks import suggest
from ..core.documents import ENV_VAR, substitute_url
from ..core.yamlfile import Document, Path_, read_text
from ..errors import Problem
from ..models.base import FieldSpec, Kind, ProtoModel, specs
from .environments import VAR_ENV_PREFIX, EnvTarget, env_var_name
from .files import in_git_dir, resolved_below
from .loading import SourceFile, display_path

__all__ = [
    "ENV_VAR",
    "INCLUDABLE",
    "VAR_NAME",
    "VAR_RE",
    "VAR_SPAN",
    "Expander",
    "env_var_urls",
    "fill_app_fields",
    "is_ref",
    "put_back",
    "substitute",
]

VAR_SPAN = r"\{([^}]*)\}?"  # what follows "$" (or the escape "$$") in a ${NAME} reference
VAR_RE = re.compile(r"\$(\$?)" + VAR_SPAN)
VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
# A ${NAME} in an included file, and nothing else: VAR_RE's span of a stray "${" runs to the next "}"
# and would swallow a reference after it (a "${" typed into a title hid the server URL's ${API_BASE})
_INCLUDE_REF = re.compile(r"\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)\}")
INCLUDABLE = {"openApiSchema", "pythonCode", "pythonScript"}


def substitute(
    data: Any, env: EnvTarget, path: Path_, model: type[ProtoModel] | None = None
) -> tuple[Any, list[tuple[Path_, str]]]:
    """Replace ${NAME} in every string (values: :meth:`EnvTarget.var`).

    With the file's model, a placeholder that is a whole value (``enabled: ${GUARD_ON}``) takes
    the type of the field it stands in: bool, number, duration; enums stay names.
    """
    if isinstance(data, dict):
        out, missing = {}, []
        for k, v in data.items():
            out[k], m = substitute(v, env, (*path, k), model)
            missing += m
        return out, missing
    if isinstance(data, list):
        items, missing = [], []
        for i, v in enumerate(data):
            value, m = substitute(v, env, (*path, i), model)
            items.append(value)
            missing += m
        return items, missing
    if not isinstance(data, str) or "${" not in data:
        return data, []
    whole = WHOLE_VAR.fullmatch(data)
    if whole and model is not None:
        spec = field_at(model, path)
        value = env.var(whole.group(1))
        if spec is not None and value is not None and spec.kind in TYPED:
            return _typed(value, spec, whole.group(1), env.name, path)
    problems: list[tuple[Path_, str]] = []

    def replace(match: re.Match[str]) -> str:
        escaped, name = match.group(1), match.group(2)
        if escaped:
            return match.group(0)[1:]  # $${ is a literal ${; the rest stays as written
        if not match.group(0).endswith("}") or not VAR_NAME.match(name):
            problems.append(
                (path, f"malformed variable reference '{match.group(0)}': write ${{NAME}}, or $${{ for a literal ${{")
            )
            return match.group(0)
        value = env.var(name)
        if value is None:
            # the names the repo and the command line give, never the process's: a typo is the likely cause,
            # unless cesync.yaml declares the name sensitive (then it is right, only its value is missing)
            hint = "" if name in env.sensitive else suggest(name, sorted({*env.vars, *env.overrides}))
            own, shared = env_var_name(env.name, name), VAR_ENV_PREFIX + name
            if name in env.sensitive:  # its value never belongs in cesync.yaml (validate warns there)
                said = (
                    f"sensitive variable '{name}' is not set for environment '{env.name}'{hint}: give it from outside the "
                    f"repo, as the process environment variable {own} (this environment's own) or {shared} (every "
                    "environment's), or with --var / --var-file; a CI secret, never a value in cesync.yaml"
                )
            else:
                said = (
                    f"variable '{name}' is not set for environment '{env.name}'{hint} (set it in environments.{env.name}.vars, "
                    f"defaults.vars, --var or the process environment as {own} or {shared}; a plain {name} is never read)"
                )
            problems.append((path, said))
            return match.group(0)
        return value

    return VAR_RE.sub(replace, data), problems


WHOLE_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")  # used with fullmatch: the placeholder is the whole value
TYPED = {Kind.BOOL, Kind.INT32, Kind.INT64, Kind.DOUBLE, Kind.FLOAT, Kind.DURATION}
_BOOLS = {"true": True, "false": False}


def field_at(model: type[ProtoModel], path: Path_) -> FieldSpec | None:
    """The field a value at path of a file of ``model`` stands in (an element's, for a list or map entry)."""
    spec: FieldSpec | None = None
    message: type[ProtoModel] | None = model
    entry = False  # at a map's key or a list's index: the value has the field's own type
    for step in path:
        if isinstance(step, int) or (spec is not None and spec.map and not entry):
            if spec is None or not (spec.repeated or spec.map) or entry:
                return None
            entry = True
            continue
        if message is None:
            return None
        spec = specs(message).get(step)
        if spec is None:
            return None
        message, entry = spec.message, False
    if spec is not None and (spec.repeated or spec.map) and not entry:
        return None  # the placeholder stands for the whole list or map: only text can
    return spec


def _typed(value: str, spec: FieldSpec, name: str, env_name: str, path: Path_) -> tuple[Any, list[tuple[Path_, str]]]:
    """``value`` as the field's type, or a problem saying what the field takes."""
    text = value.strip()
    kind = spec.kind
    if kind is Kind.BOOL and text.lower() in _BOOLS:
        return _BOOLS[text.lower()], []
    if kind in (Kind.INT32, Kind.INT64) and re.fullmatch(r"[+-]?\d+", text):
        return int(text), []
    if kind in (Kind.DOUBLE, Kind.FLOAT) and re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text):
        return float(text), []
    if kind is Kind.DURATION:
        return (f"{text}s" if re.fullmatch(r"\d+(\.\d{1,9})?", text) else value), []  # '30' means 30 seconds
    takes = {
        Kind.BOOL: "true or false",
        Kind.INT32: "a whole number",
        Kind.INT64: "a whole number",
        Kind.DOUBLE: "a number",
        Kind.FLOAT: "a number",
    }[kind]
    field_name = ".".join(str(p) for p in path)
    return value, [(path, f"variable '{name}' is {value!r} for environment '{env_name}', but {field_name} takes {takes}")]


@dataclass
class Expander:
    """Resolves {file: path} includes, mapping-form schemas and {ref: kind/id} references."""

    root: Path  # the repo's folder, resolved (includes are checked against it)
    base: Path
    doc: Document
    parent: str
    known: set[tuple[str, str]]
    problems: list[Problem] = field(default_factory=list)
    includes: dict[Path_, tuple[str, int]] = field(default_factory=dict)
    ref_paths: set[Path_] = field(default_factory=set)  # where a {ref:} was replaced by a name
    used_parent: bool = False  # a ref named the app: the result differs per environment
    failed_refs: set[Path_] = field(default_factory=set)  # where a {ref:} was reported and left empty
    references: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # the kind's dotted field -> collections
    message: str = ""  # the kind's API message (for the field-behaviour table)

    def expand(self, data: Any, path: Path_ = ()) -> Any:
        if isinstance(data, str):
            if self.references:
                self.written_name(data, path)
            return data
        if isinstance(data, list):
            return [
                self.ref(v["ref"], (*path, i, "ref"), v.get("owner")) if is_ref(v) else self.expand(v, (*path, i))
                for i, v in enumerate(data)
            ]
        if not isinstance(data, dict):
            return data
        out: dict[str, Any] = {}
        for key, value in data.items():
            here = (*path, key)
            if is_ref(value):
                out[key] = self.ref(value["ref"], (*here, "ref"), value.get("owner"))
            elif key in INCLUDABLE and isinstance(value, dict):
                out[key] = self.include(key, value, here)
            else:
                out[key] = self.expand(value, here)
        return out

    def ref(self, target: Any, at: Path_, owner: Any = None) -> str | None:
        """owner: {ref: ..., owner: NAME} names another repo's resource of a shared app (cesync.yaml
        owner): not this repo's to define, so only its shape is checked here; plan checks the app
        holds it and another owner's record owns it (core.ownership.foreign_references)."""
        parts = target.split("/") if isinstance(target, str) else []
        draft = target == DRAFT_VERSION
        if not draft and (len(parts) != 2 or parts[0] not in ref_collections() or not ID_RE.match(parts[1])):
            shapes = spoken((*(f"{c}/<id>" for c in ref_collections()), f"{DRAFT_VERSION} (the draft app)"), "or")
            self.problems.append(self.doc.problem(at, f"ref must be {shapes}; got {target!r}"))
            self.failed_refs.add(at[:-1])
            return None
        dotted = ".".join(p for p in at[:-1] if isinstance(p, str))
        wanted = self.references.get(dotted, ())
        if wanted and parts[0] not in wanted:  # e.g. a tool in an agent's guardrails: CES would refuse it
            shapes = spoken((f"{c}/<id>" for c in wanted), "or")
            self.problems.append(self.doc.problem(at, f"ref {target!r} cannot stand in {dotted}: it takes {shapes}"))
            self.failed_refs.add(at[:-1])
            return None
        found = by_collection(parts[0])  # None: a collection refs may name but cesync does not manage
        kind = found.name if found else None
        self.ref_paths.add(at[:-1])
        if owner is not None:
            if not isinstance(owner, str) or not OWNER_RE.match(owner) or draft:
                self.problems.append(
                    self.doc.problem((*at[:-1], "owner"), f"owner must name another repo's owner (a-z, 0-9, -); got {owner!r}")
                )
                self.failed_refs.add(at[:-1])
                return None
            if kind is not None and (kind, parts[1]) in self.known:
                self.problems.append(
                    self.doc.problem((*at[:-1], "owner"), f"ref {target!r} is this repo's own {kind}: drop owner: {owner}")
                )
                self.failed_refs.add(at[:-1])
                return None
        elif kind is not None and (kind, parts[1]) not in self.known:
            ids = sorted(i for k, i in self.known if k == kind)
            # the suggestion as the ref is written ('tools/greet'), ready to paste
            hint = suggest(parts[1], ids).replace("'", f"'{parts[0]}/", 1)
            self.problems.append(self.doc.problem(at, f"ref {target!r} names no {kind} of this repo{hint}"))
            self.failed_refs.add(at[:-1])
            return None
        self.used_parent = True
        return f"{self.parent}/{target}"

    def written_name(self, value: str, at: Path_) -> None:
        """A resource-name field (the kind's references) written as text rather than a {ref:}.

        CES takes a full resource name there (the protos' ``google.api.resource_reference``
        annotations; see api/kinds.py): a bare ``tools/x``, an id, a name of another app or one
        naming nothing the repo defines would be stored as written, or refused at apply time.
        A full name of this app's resource the repo defines is what a {ref:} gives: accepted.
        """
        dotted = ".".join(p for p in at if isinstance(p, str))
        wanted = self.references.get(dotted)
        if not wanted or not value:
            return
        self.used_parent = True  # the verdict depends on the environment's app
        parts = value.split("/")
        collection, rid = (parts[-2], parts[-1]) if len(parts) >= 2 else (wanted[0], value)
        if collection not in wanted:
            collection = wanted[0]
        hint = f"write {{ref: {collection}/{rid if ID_RE.match(rid) else '<id>'}}}"
        prefix = f"{self.parent}/{collection}/"
        if value.startswith(prefix) and "/" not in value[len(prefix) :]:
            found = by_collection(collection)
            if found is None or (found.name, rid) in self.known or rid == "-":
                return  # this app's resource, written out in full
            if self.message and fb.name_unchecked(self.message, at):
                return  # CES takes a name of nothing the app holds here (api.behaviour NAME_UNCHECKED)
            ids = sorted(i for k, i in self.known if k == found.name)
            message = f"{dotted} names {value!r}, no {found.name} of this repo{suggest(rid, ids)}; {hint}"
        elif value.startswith(self.parent + "/"):
            message = f"{dotted} names {value!r}, which is not one of this app's {spoken(wanted, 'or')}; {hint}"
        elif value.startswith("projects/") and "/apps/" in value:
            message = f"{dotted} names {value!r}, a resource of another app (this environment's is {self.parent}); {hint}"
        else:
            message = f"{dotted} holds {value!r}, which is not a resource name: CES takes a full name here; {hint}"
        self.problems.append(self.doc.problem(at, message))

    def include(self, key: str, value: dict[str, Any], here: Path_) -> str | None:
        if set(value) != {"file"}:
            if key == "openApiSchema":
                return dump_yaml(value)
            self.problems.append(self.doc.problem(here, f"{key} must be text or {{file: path}}"))
            return None
        rel, at = value["file"], (*here, "file")
        if not isinstance(rel, str) or not rel:
            self.problems.append(self.doc.problem(at, "file: must be a relative path"))
            return None
        target = resolved_below(self.base / rel, self.root)
        if Path(rel).is_absolute() or not target.is_relative_to(self.root):
            self.problems.append(self.doc.problem(at, f"file '{rel}' is outside the repo; includes must stay inside it"))
            return None
        if in_git_dir(target, self.root, resolved=True):
            self.problems.append(
                self.doc.problem(at, f"file '{rel}' is inside .git: git's own files are not repo content and are never included")
            )
            return None
        if not target.is_file():
            where = display_path(self.base, self.root)
            self.problems.append(self.doc.problem(at, f"file '{rel}' does not exist (relative to {where})"))
            return None
        text = read_text(target, display_path(target, self.root))
        if isinstance(text, Problem):
            self.problems.append(text)
            return None
        shown = display_path(target, self.root)
        self.includes[here] = (shown, 0)
        if key == "openApiSchema":
            self.problems += _variables_in_include(text, shown, here)
        # Line endings are the checkout's business (git's autocrlf), not the app's: a CRLF checkout
        # must plan what an LF one does, or every plan there shows a change no line diff can show.
        return text.replace("\r\n", "\n")


def _variables_in_include(text: str, shown: str, here: Path_) -> list[Problem]:
    """${NAME} in an included OpenAPI document: included files are taken as they are, so it would
    reach CES as written, most often in the server URL, which each environment gives another way."""
    found = []
    for match in _INCLUDE_REF.finditer(text):
        if match.group(1):
            continue  # $${ is no reference in a templated string either
        line = text.count("\n", 0, match.start()) + 1
        col = match.start() - (text.rfind("\n", 0, match.start()) + 1) + 1
        field_name = here[0] if here else "openApiToolset"
        found.append(
            Problem(
                shown,
                line,
                col,
                f"'{match.group(0)}' would reach CES as written: included files are not templated. For the server "
                f"URL write $env_var here and give the URL with {field_name}.url: {match.group(0)} (or "
                "environments.<env>.urls.<id>); other text: write it out, or keep the schema inline in the YAML file",
            )
        )
    return found


OWNER_RE = re.compile(r"[a-z][a-z0-9-]{0,39}\Z")


def is_ref(value: Any) -> bool:
    return isinstance(value, dict) and set(value) in ({"ref"}, {"ref", "owner"})


def dump_yaml(value: Any) -> str:
    yaml = yamlconfig.block_dumper()
    buf = StringIO()
    yaml.dump(value, buf)
    return buf.getvalue()


def env_var_urls(src: SourceFile, body: dict[str, Any], env: EnvTarget) -> list[Problem]:
    """Replace CES's $env_var server placeholder with this environment's url."""
    problems: list[Problem] = []
    for field_name in ("openApiTool", "openApiToolset"):
        spec = body.get(field_name)
        if not isinstance(spec, dict) or ENV_VAR not in spec.get("openApiSchema", ""):
            continue
        url = spec.get("url") or env.urls.get(src.id)
        if not url:
            problems.append(
                src.doc.problem(
                    (field_name, "openApiSchema"),
                    f"the schema uses $env_var but environment '{env.name}' gives no url: set {field_name}.url "
                    f"(e.g. to ${{{src.id.upper().replace('-', '_')}_URL}}) or environments.{env.name}.urls.{src.id}",
                    key=True,
                )
            )
            continue
        spec = body[field_name] = {**spec, "openApiSchema": substitute_url(spec["openApiSchema"], ENV_VAR, url), "url": url}
    return problems


def put_back(body: dict[str, Any], path: Path_, value: Any) -> None:
    """Set ``value`` at ``path`` in ``body`` (lint_keys set it aside: the models predate it); the
    mappings and lists on the path are the model's dump of the file's own."""
    node: Any = body
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value


def fill_app_fields(data: Any, fields: tuple[str, ...], parent: str) -> bool:
    """The app's name where the kind holds it (ResourceKind.app_fields) and the file leaves it out,
    inside a mapping the file writes; whether any was filled (the body then depends on the environment)."""
    filled = False
    for dotted in fields:
        *path, last = dotted.split(".")
        node = data
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and last not in node:
            node[last] = parent
            filled = True
    return filled
