"""``exportApp`` and ``importApp`` archives: a zip of one folder per app.

The layout is the one CES exports and cxas-scrapi pushes (and ``cesync
import-archive`` reads)::

    <app>/app.json                                   the app's writable fields
    <app>/global_instruction.txt                     App.globalInstruction
    <app>/agents/<id>/<id>.json                      one agent; instruction in instruction.txt
    <app>/tools/<id>/<id>.json                       one tool; python_function/python_code.py
    <app>/toolsets/<id>/<id>.json                    one toolset; open_api_toolset/open_api_schema.yaml
    <app>/guardrails/<id>/<id>.json, examples/<id>/<id>.json

A field whose text lives in a file holds the file's path in the archive (from the
app folder). Resource names become short: a reference to a tool of the app is the
tool's folder name (``end_session``, ``lookup``), so an archive moves between apps.
Folders are named by resource id here (CES names them by display name); import
resolves a short name by folder, then by display name, and fills the ``$env_var``
places from ``<app>/environment.json`` (``{collection: {resource: {field: value}}}``) as
CES does. Deployments and versions are not part of an archive, as in CES.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from .bounded import load_json, load_yaml
from .errors import RpcError
from .wire import map_references, writable

__all__ = ["ARCHIVED", "EXPORTED", "Bundle", "pack", "unpack"]

ARCHIVED = ("tools", "toolsets", "guardrails", "agents", "examples")  # in the order import creates them
# What an app archive holds besides (an app version's AppSnapshot does not): the evaluation kinds
# cxas-scrapi pushes in an app folder (cxas_scrapi/cli/app.py, the push's valid_roots: "evaluations",
# "evaluationDatasets", "evaluationExpectations"; no scheduled runs). Exported from the draft only.
EXPORTED = (*ARCHIVED, "evaluationExpectations", "evaluations", "evaluationDatasets")
FILE_FIELDS: dict[str, dict[tuple[str, ...], str]] = {
    "apps": {("globalInstruction",): "global_instruction.txt"},
    "agents": {("instruction",): "instruction.txt"},
    "tools": {
        ("pythonFunction", "pythonCode"): "python_function/python_code.py",
        ("openApiTool", "openApiSchema"): "open_api_tool/open_api_schema.yaml",
    },
    "toolsets": {("openApiToolset", "openApiSchema"): "open_api_toolset/open_api_schema.yaml"},
}
ENV_VAR = "$env_var"
MAX_MEMBERS = 20_000
MAX_BYTES = 200 * 1024 * 1024


def _short(app: str) -> Any:
    prefix = f"{app}/"

    def change(collection: str, value: str) -> str:
        if not value.startswith(prefix):
            return value
        rest = value[len(prefix) :]
        head = f"{collection}/"
        return rest[len(head) :] if rest.startswith(head) and "/" not in rest[len(head) :] else rest

    return change


def pack(app: dict[str, Any], resources: dict[str, dict[str, dict[str, Any]]], yaml: bool = False) -> bytes:
    """The archive of an app (its data) and its resources (collection -> id -> data)."""
    parent = app["name"]
    top = parent.rsplit("/", 1)[-1]
    files: dict[str, str] = {}
    short = _short(parent)

    def put(collection: str, folder: str, name: str, data: dict[str, Any]) -> None:
        body = map_references(collection, writable(collection, data), short)
        for path, filename in FILE_FIELDS.get(collection, {}).items():
            holder = body
            for key in path[:-1]:
                holder = holder.get(key) if isinstance(holder, dict) else None
            if isinstance(holder, dict) and isinstance(holder.get(path[-1]), str):
                rel = f"{folder}{filename}"
                files[rel] = holder[path[-1]]
                holder[path[-1]] = rel
        files[f"{folder}{name}"] = _dump(body, yaml)

    ext = "yaml" if yaml else "json"
    put("apps", "", f"app.{ext}", app)
    for collection in EXPORTED:
        for rid, data in sorted(resources.get(collection, {}).items()):
            if "systemTool" not in data:  # system tools come with every app
                put(collection, f"{collection}/{rid}/", f"{rid}.{ext}", data)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel, text in sorted(files.items()):
            zf.writestr(f"{top}/{rel}", text)
    return buffer.getvalue()


def _dump(data: dict[str, Any], yaml: bool) -> str:
    if not yaml:
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    out = io.StringIO()
    YAML(typ="safe", pure=True).dump(data, out)
    return out.getvalue()


@dataclass
class Bundle:
    """An archive read back: the app's fields and its resources by collection and id, names still short."""

    app: dict[str, Any] = field(default_factory=dict)
    resources: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def unpack(content: bytes) -> Bundle:
    """Read an archive; INVALID_ARGUMENT when it is not a readable app archive."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(content))
    except zipfile.BadZipFile as exc:
        raise RpcError("INVALID_ARGUMENT", f"appContent is not a zip archive: {exc}") from None
    with zf:
        members = [m for m in zf.infolist() if not m.is_dir()]
        if len(members) > MAX_MEMBERS or sum(m.file_size for m in members) > MAX_BYTES:
            raise RpcError("INVALID_ARGUMENT", "the archive is too large")
        texts: dict[str, str] = {}
        for m in members:
            if m.filename.startswith("/") or ".." in m.filename.split("/"):
                raise RpcError("INVALID_ARGUMENT", f"the archive holds an unsafe path {m.filename!r}")
            try:
                texts[m.filename] = zf.read(m).decode("utf-8")
            except (UnicodeDecodeError, zipfile.BadZipFile, OSError):
                continue  # not text: not part of an app
    root = _root(texts)
    files = {name[len(root) :]: text for name, text in texts.items() if name.startswith(root)}
    bundle = Bundle()
    for ext in ("json", "yaml", "yml"):
        if f"app.{ext}" in files:
            bundle.app = _inline("apps", _load(files[f"app.{ext}"], f"app.{ext}"), files)
            break
    for collection in EXPORTED:
        for rel in sorted(files):
            parts = rel.split("/")
            if len(parts) == 3 and parts[0] == collection and parts[2].rsplit(".", 1)[0] == parts[1]:
                if not parts[2].endswith((".json", ".yaml", ".yml")):
                    continue
                try:
                    data = _load(files[rel], rel)
                except RpcError as exc:
                    bundle.warnings.append(exc.message)
                    continue
                bundle.resources.setdefault(collection, {})[parts[1]] = _inline(collection, data, files)
    if "environment.json" in files:
        try:
            _environment(bundle, _load(files["environment.json"], "environment.json"))
        except RpcError as exc:
            bundle.warnings.append(exc.message)
    return bundle


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _environment(bundle: Bundle, env: dict[str, Any]) -> None:
    """environment.json ({collection: {resource: {field: value}}}) fills the ``$env_var`` places, as CES's import does."""
    for collection, entries in env.items():
        resources = bundle.resources.get(_camel(collection), {})
        for name, fields in entries.items() if isinstance(entries, dict) else []:
            by_display = {str(d.get("displayName")): d for d in resources.values()}
            target = resources.get(name) or by_display.get(name)
            if target is None or not isinstance(fields, dict):
                bundle.warnings.append(f"environment.json: {collection}/{name} is not in the archive; its values were not used")
                continue
            for path, value in _leaves(fields, ()):
                _put(target, path, value)


def _leaves(data: dict[str, Any], path: tuple[str, ...]) -> list[tuple[tuple[str, ...], Any]]:
    out: list[tuple[tuple[str, ...], Any]] = []
    for key, value in data.items():
        here = (*path, *(_camel(k) for k in str(key).split(".")))
        out += _leaves(value, here) if isinstance(value, dict) and value else [(here, value)]
    return out


def _put(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    holder = data
    for key in path[:-1]:
        holder = holder.setdefault(key, {}) if isinstance(holder.get(key, {}), dict) else {}
    current = holder.get(path[-1])
    if isinstance(current, str) and isinstance(value, str) and ENV_VAR in current:
        holder[path[-1]] = current.replace(ENV_VAR, value)
    else:
        holder[path[-1]] = value
    if path[-1] == "url" and isinstance(value, str) and isinstance(holder.get("openApiSchema"), str):
        holder["openApiSchema"] = holder["openApiSchema"].replace(ENV_VAR, value)  # the schema's server is the url


def _root(texts: dict[str, str]) -> str:
    """The app folder: the one holding app.json (or app.yaml), or the archive's top."""
    for ext in ("json", "yaml", "yml"):
        found = sorted((n for n in texts if n == f"app.{ext}" or n.endswith(f"/app.{ext}")), key=len)
        if found:
            return found[0][: -len(f"app.{ext}")]
    raise RpcError("INVALID_ARGUMENT", "the archive holds no app.json or app.yaml")


def _load(text: str, where: str) -> dict[str, Any]:
    try:
        data = load_json(text) if where.endswith(".json") else load_yaml(text)
    except (ValueError, YAMLError) as exc:
        raise RpcError("INVALID_ARGUMENT", f"{where} is not valid: {exc}") from None
    if not isinstance(data, dict):
        raise RpcError("INVALID_ARGUMENT", f"{where} must hold an object")
    return data


def _inline(collection: str, data: dict[str, Any], files: dict[str, str]) -> dict[str, Any]:
    """Fields holding the path of an archived file get the file's text."""
    for path in FILE_FIELDS.get(collection, {}):
        holder: Any = data
        for key in path[:-1]:
            holder = holder.get(key) if isinstance(holder, dict) else None
        value = holder.get(path[-1]) if isinstance(holder, dict) else None
        if isinstance(holder, dict) and isinstance(value, str) and value in files:
            holder[path[-1]] = files[value]
    return data
