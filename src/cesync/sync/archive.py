"""A CES app export (console, ``exportApp`` or cxas-scrapi ``pull``) -> a cesync repo.

The layout read (docs/commands/import-archive.md):

    <app>/app.json | app.yaml                  the app's own settings (app.yaml of the repo)
    <app>/environment.json                     environment-dependent values, by resource type and name
    <app>/tools/<name>/<name>.json | .yaml     one tool, proto JSON (camelCase or snake_case keys)
    <app>/toolsets/<name>/<name>.json | .yaml  one toolset
    <app>/agents|guardrails|examples|deployments/<name>/<name>.json | .yaml   one of each
    <app>/tools/<name>/python_function/python_code.py   files named by a field's value

Import does what CES's own import does, then what ``cesync export`` does: it puts
``environment.json``'s values in place of ``$env_var`` (and a schema's server URL in
the tool's ``url``), then turns each value back into a ``${VAR}`` of the new
environment. Full names of the exported app's own resources become ``{ref: ...}`` of
the repo (see :func:`retarget`); folders of anything else are listed as skipped.
"""

from __future__ import annotations

import re
import stat
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..api.kinds import KINDS, ResourceKind, by_collection, collections
from ..api.protojson import json_name
from ..api.resource import ID_RE, Resource
from ..api.words import spoken
from ..core.toolset_form import as_toolsets
from ..core.walk import SpecWalker
from ..core.yamlfile import load_text, read_text
from ..errors import CesyncError, ConfigError, Problem
from ..models import FieldSpec, ProtoModel
from ..repo.templating import ENV_VAR

__all__ = ["ArchiveContents", "extract_zip", "find_app_root", "read_archive", "retarget"]

MAX_MEMBERS = 20_000
MAX_TOTAL_BYTES = 200 * 1024 * 1024
FILE_FIELDS = {"pythonCode", "pythonScript", "openApiSchema", "instruction", "globalInstruction"}
ARCHIVE_APP = "projects/archive/locations/archive/apps/archive"  # names resolved from short ones, until retarget
APP_MARKERS = ("app.json", "app.yaml", "environment.json", *collections())


@dataclass
class ArchiveContents:
    resources: list[Resource] = field(default_factory=list)
    variables: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    app_name: str | None = None


def extract_zip(archive: Path, dest: Path) -> None:
    """Unpack a zip safely: no paths outside dest, no links, bounded size."""
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as exc:
        raise CesyncError(f"{archive} is not a readable zip archive ({exc}); export the app again") from None
    with zf:
        members = zf.infolist()
        if len(members) > MAX_MEMBERS:
            raise CesyncError(f"{archive} has {len(members)} entries; the limit is {MAX_MEMBERS}")
        if sum(m.file_size for m in members) > MAX_TOTAL_BYTES:
            raise CesyncError(f"{archive} unpacks to more than {MAX_TOTAL_BYTES // 2**20} MB; refusing it")
        root = dest.resolve()
        for m in members:
            target = (root / m.filename).resolve()
            if m.filename.startswith(("/", "\\")) or ".." in Path(m.filename).parts or not target.is_relative_to(root):
                raise CesyncError(f"{archive} holds an unsafe path {m.filename!r}; refusing to unpack it")
            if stat.S_ISLNK(m.external_attr >> 16):
                raise CesyncError(f"{archive} holds a symbolic link {m.filename!r}; refusing to unpack it")
        try:
            zf.extractall(root)
        except (zipfile.BadZipFile, OSError, EOFError, zipfile.LargeZipFile) as exc:
            raise CesyncError(f"{archive} is corrupt ({exc}); export the app again") from None


def find_app_root(top: Path) -> Path:
    """The folder that holds the app: the top, or the one folder an archive wraps it in."""
    here = top
    for _ in range(4):
        if any((here / m).exists() for m in APP_MARKERS):
            return here
        folders = [p for p in here.iterdir() if p.is_dir() and not p.name.startswith((".", "__MACOSX"))]
        if len(folders) != 1:
            break
        here = folders[0]
    expected = spoken((f"{c}/" for c in collections()), "or")
    raise CesyncError(f"no CES app export in {top}: expected app.json, environment.json, {expected}")


def read_archive(root: Path) -> ArchiveContents:
    """Every tool and toolset of an unpacked export, with environment.json applied."""
    out = ArchiveContents(app_name=root.name)
    problems: list[Problem] = []
    env_values = _environment(root, problems)
    for kind in KINDS.values():
        files = _app_files(root, kind.name) if kind.singleton else _resource_files(root / kind.collection)
        for name, path in files:
            resource = _resource(root, path, name, kind, problems, out)
            if resource is not None:
                out.resources.append(resource)
    for entry in sorted(p.name for p in root.iterdir() if p.is_dir() and by_collection(p.name) is None):
        out.notes.append(f"skipped {entry}/: cesync manages {spoken(collections())} only")
    if problems:
        raise ConfigError(problems)
    _resolve_short_names(out)
    _apply_environment(out, env_values)
    out.resources, converted = as_toolsets(out.resources, ARCHIVE_APP)
    out.notes += converted
    ids = [r.key for r in out.resources]
    dupes = sorted({f"{k} {i}" for k, i in ids if ids.count((k, i)) > 1})
    if dupes:
        raise CesyncError(f"two resources of the export map to the same id: {', '.join(dupes)}")
    return out


def _app_files(root: Path, name: str) -> Iterator[tuple[str, Path]]:
    """The app's own settings: app.json (or app.yaml) at the top of the export."""
    found = next((root / f"{name}{ext}" for ext in (".json", ".yaml", ".yml") if (root / f"{name}{ext}").is_file()), None)
    if found is not None:
        yield name, found


def _resolve_short_names(out: ArchiveContents) -> None:
    """An export names a resource of its app by folder (``get_weather``) or display name: the full name
    (under ARCHIVE_APP) wherever a field holds a reference (each kind's ``references``)."""
    ids: dict[str, set[str]] = {}
    shown: dict[str, dict[str, str]] = {}
    for r in out.resources:
        ids.setdefault(r.kind.collection, set()).add(r.id)
        if isinstance(r.body.get("displayName"), str):
            shown.setdefault(r.kind.collection, {}).setdefault(r.body["displayName"], r.id)

    def full(value: str, targets: tuple[str, ...], where: str) -> str:
        if value.startswith("projects/"):
            return value
        head, _, rest = value.partition("/")
        if head in targets and rest and "/" not in rest:
            return f"{ARCHIVE_APP}/{value}"
        for collection in targets:
            rid = value if value in ids.get(collection, ()) else shown.get(collection, {}).get(value)
            if rid is not None:
                return f"{ARCHIVE_APP}/{collection}/{rid}"
        if ID_RE.match(value):  # not in the export (a system tool such as end_session): still this app's
            return f"{ARCHIVE_APP}/{targets[0]}/{value}"
        out.notes.append(f"{where}: {value!r} names no {spoken(targets, 'or')} of the export; kept as it is")
        return value

    for r in out.resources:
        for dotted, targets in r.kind.references.items():
            where = f"{r.kind} {r.id}: {dotted}"
            _map_at(r.body, dotted.split("."), lambda v, t=targets, w=where: full(v, t, w))


def _map_at(node: Any, path: list[str], change: Any) -> None:
    """Replace the string(s) at a dotted path, through any lists on the way."""
    if isinstance(node, list):
        for item in node:
            _map_at(item, path, change)
        return
    if not isinstance(node, dict) or path[0] not in node:
        return
    if len(path) > 1:
        _map_at(node[path[0]], path[1:], change)
        return
    value = node[path[0]]
    if isinstance(value, str):
        node[path[0]] = change(value)
    elif isinstance(value, list):
        node[path[0]] = [change(v) if isinstance(v, str) else v for v in value]


def retarget(contents: ArchiveContents, parent: str) -> list[Resource]:
    """The resources with the export's full names of its own resources moved under parent, where refs find them."""
    app = r"projects/[^/]+/locations/[^/]+/apps/[^/]+"
    pattern = re.compile(rf"^{app}/(({'|'.join(map(re.escape, collections()))})/[A-Za-z0-9_-]+)\Z")

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        if isinstance(node, str) and (m := pattern.match(node)):
            return f"{parent}/{m.group(1)}"
        return node

    return [Resource(r.kind, r.id, walk(r.body)) for r in contents.resources]


def _resource_files(folder: Path) -> Iterator[tuple[str, Path]]:
    if not folder.is_dir():
        return
    for entry in sorted(folder.iterdir()):
        if entry.is_dir():
            candidates = [entry / f"{entry.name}{ext}" for ext in (".json", ".yaml", ".yml")]
            found = next((c for c in candidates if c.is_file()), None)
            if found is not None:
                yield entry.name, found
        elif entry.suffix in (".json", ".yaml", ".yml"):
            yield entry.stem, entry


def _resource(
    root: Path, path: Path, name: str, kind: ResourceKind, problems: list[Problem], out: ArchiveContents
) -> Resource | None:
    display = str(path.relative_to(root))
    text = read_text(path, display)
    doc = load_text(text, display) if isinstance(text, str) else text
    if isinstance(doc, Problem):
        problems.append(doc)
        return None
    if not isinstance(doc.data, dict):
        problems.append(doc.problem((), f"a {kind} must be a mapping of fields"))
        return None
    body = _camel(doc.data, kind.model)
    rid = kind.name if kind.singleton else _id_for(body.get("name"), name)
    if rid is None:
        problems.append(doc.problem(("name",), f"cannot make a cesync {kind} id from {name!r}"))
        return None
    body["name"] = f"(archive)/{rid}"  # dropped by normalization; the real name comes with the target app
    body = _inline_files(body, root, display, problems)
    return Resource(kind, rid, body)


def _id_for(name: Any, folder: str) -> str | None:
    if isinstance(name, str) and name and ID_RE.match(name.rsplit("/", 1)[-1]):
        return name.rsplit("/", 1)[-1]
    rid = re.sub(r"[^A-Za-z0-9_-]+", "-", folder).strip("-_")[:128]
    return rid if rid and ID_RE.match(rid) else None


def _camel(data: dict[str, Any], model: type[ProtoModel]) -> dict[str, Any]:
    """snake_case keys (YAML exports) to the JSON names; map and Struct keys stay as they are."""
    out: dict[str, Any] = _Camel().walk(data, model)
    return out


class _Camel(SpecWalker):
    maps = False  # a map's keys are data, not field names

    def field_name(self, key: str, table: dict[str, FieldSpec]) -> str:
        return key if key in table else json_name(key)


def _inline_files(data: Any, root: Path, display: str, problems: list[Problem]) -> Any:
    """A code or schema field whose value names a file of the export gets the file's text."""
    if isinstance(data, list):
        return [_inline_files(v, root, display, problems) for v in data]
    if not isinstance(data, dict):
        return data
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in FILE_FIELDS and isinstance(value, str) and "\n" not in value and len(value) < 512:
            target = (root / value).resolve()
            if target.is_relative_to(root.resolve()) and target.is_file():
                text = read_text(target, value)
                if isinstance(text, Problem):
                    problems.append(text)
                    continue
                value = text
        out[key] = _inline_files(value, root, display, problems)
    return out


def _environment(root: Path, problems: list[Problem]) -> dict[tuple[str, str], dict[tuple[str, ...], Any]]:
    """environment.json: {collection: {resource: {field: value}}} -> values by (collection, id) and field path."""
    path = root / "environment.json"
    if not path.is_file():
        return {}
    text = read_text(path, "environment.json")
    doc = load_text(text, "environment.json") if isinstance(text, str) else text
    if isinstance(doc, Problem):
        problems.append(doc)
        return {}
    if not isinstance(doc.data, dict):
        problems.append(doc.problem((), "environment.json must be an object of resource types"))
        return {}
    values: dict[tuple[str, str], dict[tuple[str, ...], Any]] = {}
    for collection, resources in doc.data.items():
        if not isinstance(resources, dict):
            problems.append(doc.problem((collection,), "expected an object of resources by name"))
            continue
        for name, fields in resources.items():
            leaves: dict[tuple[str, ...], Any] = dict(_leaves(fields, ())) if isinstance(fields, dict) else {(): fields}
            values[(json_name(collection), str(name))] = leaves
    return values


def _leaves(data: dict[str, Any], path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    for key, value in data.items():
        here = (*path, *(json_name(k) for k in str(key).split(".")))
        if isinstance(value, dict) and value:
            yield from _leaves(value, here)
        else:
            yield here, value


def _apply_environment(out: ArchiveContents, env: dict[tuple[str, str], dict[tuple[str, ...], Any]]) -> None:
    by_key = {(r.kind.collection, r.id): r for r in out.resources}
    by_display = {(r.kind.collection, str(r.body.get("displayName"))): r for r in out.resources}
    used: set[str] = set()
    for (collection, name), leaves in sorted(env.items()):
        resource = (
            by_key.get((collection, name))
            or by_key.get((collection, _id_for(None, name) or ""))
            or by_display.get((collection, name))
        )
        if resource is None:
            out.notes.append(f"environment.json: {collection}/{name} is not a resource of the export; skipped")
            continue
        for path, value in leaves.items():
            if not path or not isinstance(value, str):
                out.notes.append(f"environment.json: {collection}/{name}: {'.'.join(path) or 'value'} is not a string; skipped")
                continue
            var = _var_name(resource.id, path, used)
            out.variables[var] = value
            _set(resource.body, path, value)
    for r in out.resources:
        for path in _placeholders(r.body, ()):
            out.notes.append(f"{r.kind} {r.id}: {'.'.join(path)} is $env_var but environment.json gives no value")


def _var_name(rid: str, path: tuple[str, ...], used: set[str]) -> str:
    def clean(s: str) -> str:
        return re.sub(r"[^A-Za-z0-9]+", "_", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)).strip("_").upper()

    for n in range(1, len(path) + 1):
        name = clean("_".join((rid, *path[-n:])))
        if name not in used:
            break
    if not re.match(r"^[A-Za-z_]", name):
        name = "_" + name
    used.add(name)
    return name


def _set(body: dict[str, Any], path: tuple[str, ...], value: str) -> None:
    """Put an environment value at its field; a schema server URL goes to the tool's url."""
    node: Any = body
    for key in path[:-1]:
        node = node.setdefault(key, {}) if isinstance(node, dict) else node
    if not isinstance(node, dict):
        return
    last = path[-1]
    current = node.get(last)
    if isinstance(current, str) and ENV_VAR in current and current != ENV_VAR:
        node[last] = current.replace(ENV_VAR, value)
    else:
        node[last] = value
    if last == "url" and isinstance(node.get("openApiSchema"), str):
        node["openApiSchema"] = node["openApiSchema"].replace(ENV_VAR, value)


def _placeholders(data: Any, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _placeholders(v, (*path, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _placeholders(v, (*path, str(i)))
    elif isinstance(data, str) and ENV_VAR in data:
        yield path
