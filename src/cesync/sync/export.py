"""Remote resources -> the files of a cesync repo (pure): the reverse of ``Repo.render``.

What one environment made concrete is turned back into the portable form the repo
keeps, wherever cesync can tell how it was made:

- the OpenAPI server URL back into ``$env_var`` plus a ``url`` (or nothing, when
  ``environments.<env>.urls`` gives it);
- values of the environment's ``vars`` back into ``${NAME}`` (a whole value, or a
  part of one bounded by non-alphanumeric characters); a sensitive variable's value
  wherever it occurs in a string, glued to other text, inside an OpenAPI document or
  code (which then stays in the YAML file, where ``${NAME}`` is read), and a file that
  would still hold one is refused (:func:`check_no_secret`);
- full resource names of this app back into ``{ref: tools/<id>}``;
- Python code and OpenAPI documents into files of their own.

Rendering the result for the same environment gives back exactly what was read,
which the round-trip tests check (export, then plan: no changes).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..api.kinds import DRAFT_VERSION, KINDS, REF_ONLY, ResourceKind, by_collection
from ..api.resource import ID_RE, Resource
from ..core.documents import url_back
from ..core.normalize import DOCUMENT_FIELDS, canonical
from ..core.scrubber import MIN_SCRUB, Scrubber
from ..core.walk import SpecWalker, written_order
from ..core.yamlout import to_yaml
from ..errors import CesyncError
from ..models import FieldSpec, ProtoModel
from ..repo.jsonschema import render_schemas
from ..repo.templating import VAR_SPAN

__all__ = ["LOADER_VAR", "ExportedRepo", "check_no_secret", "export_repo", "file_names", "modeline", "templated", "to_yaml"]

CODE_FIELDS = {"pythonCode", "pythonScript"}
# Names Windows refuses as file names, whatever the extension.
RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}
LOADER_VAR = re.compile(r"\$" + VAR_SPAN)  # the span repo.VAR_RE takes after a "$"
MIN_PART = 4  # shorter values are replaced only when they are a whole string value


@dataclass
class ExportedRepo:
    files: dict[str, str] = field(default_factory=dict)  # relative path -> text
    notes: list[str] = field(default_factory=list)


def modeline(schema: str, depth: int) -> str:
    """The yaml-language-server line that gives editors the schema (a kind's, or cesync's) of a
    file depth folders below the root."""
    return f"# yaml-language-server: $schema={'../' * depth}schemas/{schema}.schema.json\n"


def file_names(kind: ResourceKind, ids: list[str]) -> dict[str, str]:
    """A safe, unique file stem per id; an id cesync cannot manage is an error."""
    bad = [i for i in ids if not ID_RE.match(i)]
    if bad:
        shown = ", ".join(repr(i) for i in sorted(bad)[:5])
        raise CesyncError(
            f"remote {kind} id{'s' if len(bad) > 1 else ''} {shown} cannot be a cesync {kind} "
            "(ids are letters, digits, '-' and '_'); nothing was written"
        )
    names: dict[str, str] = {}
    taken: set[str] = set()
    for rid in sorted(ids):
        stem, n = rid, 1
        while stem.lower() in RESERVED or stem.lower() in taken:  # case-insensitive file systems
            n += 1
            stem = f"{rid}_{n}"
        taken.add(stem.lower())
        names[rid] = stem
    return names


def export_repo(
    resources: list[Resource],
    *,
    parent: str,
    variables: Mapping[str, str],
    urls: Mapping[str, str],
    config_text: str,
    known: set[tuple[str, str]] | None = None,
    sensitive: Mapping[str, str] | None = None,
    scrubber: Scrubber | None = None,
) -> ExportedRepo:
    """known: the resources refs may name (default: those exported); sensitive: NAME -> value
    of the sensitive variables, written back as ${NAME} wherever they occur.

    A file that would still hold a sensitive value (after a "$", or in text cesync cannot
    template) is an error: nothing is written. scrubber: the run's, whose values a file may not
    hold either (None: the sensitive ones only)."""
    secrets = {n: v for n, v in (sensitive or {}).items() if len(v) >= MIN_SCRUB}
    out = ExportedRepo()
    out.files["cesync.yaml"] = config_text
    out.files[".gitignore"] = ".cesync/\nplan.json\n"
    # The editor modelines of the files point at these, so they resolve in the export.
    out.files.update({f"schemas/{name}": text for name, text in render_schemas().items()})
    known = known if known is not None else {r.key for r in resources}
    for kind in KINDS.values():
        ids = [r.id for r in resources if r.kind is kind]
        stems = file_names(kind, ids)
        for r in sorted((r for r in resources if r.kind is kind), key=lambda r: r.id):
            data = _portable(r, parent, variables, urls, known, out, secrets)
            stem = stems[r.id]
            single = kind.singleton  # the app: app.yaml at the top, no id
            data = _externalize(data, r.kind, stem, out, "" if single else "../")
            if stem != r.id and not single:
                data = {"id": r.id, **data}
            header = f"{modeline(kind.name, 0 if single else 1)}# Exported by cesync from {kind.resource_name(parent, r.id)}\n"
            out.files[f"{kind.name}.yaml" if single else f"{kind.folder}/{stem}.yaml"] = header + to_yaml(data)
    check_no_secret({k: v for k, v in out.files.items() if k != "cesync.yaml"}, secrets, scrubber)  # cesync.yaml: the repo's own
    return out


def check_no_secret(files: Mapping[str, str | None], secrets: Mapping[str, str], scrubber: Scrubber | None = None) -> None:
    """CesyncError naming the first file (and variable) that would hold a sensitive value in any
    form: one of secrets, or one the run's scrubber knows."""
    known = scrubber or Scrubber()
    for rel, text in sorted(files.items()):
        if text is None:
            continue
        for name, value in sorted(secrets.items()):
            if known.leaks(text, [value]):
                raise CesyncError(
                    f"{rel} would hold the value of the sensitive variable {name} where cesync cannot write ${{{name}}} "
                    "(after a '$', or in a file that takes no variables); nothing was written. Change that text in the "
                    "app, or leave the variable out of 'sensitive:' if it is not secret"
                )
        if known.leaks(text):  # a value another environment marks sensitive: this one does not name it
            raise CesyncError(
                f"{rel} would hold the value of a variable another environment of cesync.yaml marks sensitive; "
                "nothing was written. Change that text in the app, or give the environments different values"
            )


class _Inline(str):
    """A document or code text that holds a ${NAME}: it stays in the YAML file (an included file takes no variables)."""


def _portable(
    r: Resource,
    parent: str,
    variables: Mapping[str, str],
    urls: Mapping[str, str],
    known: set[tuple[str, str]],
    out: ExportedRepo,
    secrets: Mapping[str, str],
) -> dict[str, Any]:
    canon = canonical(r.kind, r.id, r.body)
    if canon.unknown:
        out.notes.append(f"{r.kind} {r.id}: left out fields cesync does not know: {', '.join(canon.unknown)}")
    data = _restore_documents(canon.body, r.body)
    for spec_field in ("openApiTool", "openApiToolset"):
        spec = data.get(spec_field)
        if isinstance(spec, dict):
            _env_var(r.id, spec, variables, urls)
    for dotted in r.kind.app_fields:  # the environment's app: cesync writes it back on apply
        *path, last = dotted.split(".")
        node: Any = data
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and node.get(last) == parent:
            del node[last]
    table = _replacements({**variables, **secrets}, set(secrets))
    portable: dict[str, Any] = _with_vars(_refs(data, parent, known), table, secret_table=_replacements(secrets, set(secrets)))
    return _ordered(portable, r.kind.model)


def _ordered(data: dict[str, Any], model: type[ProtoModel]) -> dict[str, Any]:
    """Keys where a file writes them (walk.written_order): what names the resource first, then the API's order."""
    out: dict[str, Any] = _Ordered().walk(data, model)
    return out


class _Ordered(SpecWalker):
    maps = False  # a map keeps its entries in the server's order

    def order(self, data: dict[str, Any], table: dict[str, FieldSpec]) -> Iterable[str]:
        rank = written_order(table)
        return sorted(data, key=lambda k: rank.get(k, len(rank)))


def _restore_documents(canon: Any, raw: Any) -> Any:
    """canonical() parses documents to compare them; the repo keeps the text as it was."""
    if isinstance(canon, dict) and isinstance(raw, dict):
        return {
            k: raw[k] if k in DOCUMENT_FIELDS and isinstance(raw.get(k), str) else _restore_documents(v, raw.get(k))
            for k, v in canon.items()
        }
    if isinstance(canon, list) and isinstance(raw, list) and len(canon) == len(raw):
        return [_restore_documents(c, r) for c, r in zip(canon, raw, strict=True)]
    return canon


def _env_var(rid: str, spec: dict[str, Any], variables: Mapping[str, str], urls: Mapping[str, str]) -> None:
    url, schema = spec.get("url"), spec.get("openApiSchema")
    if not isinstance(url, str) or not url or not isinstance(schema, str) or url not in schema:
        return
    spec["openApiSchema"] = url_back(schema, url)
    if urls.get(rid) == url:
        del spec["url"]  # the environment's urls give it back


def _refs(data: Any, parent: str, known: set[tuple[str, str]]) -> Any:
    if isinstance(data, dict):
        return {k: _refs(v, parent, known) for k, v in data.items()}
    if isinstance(data, list):
        return [_refs(v, parent, known) for v in data]
    if isinstance(data, str) and data.startswith(parent + "/"):
        if data == f"{parent}/{DRAFT_VERSION}":
            return {"ref": DRAFT_VERSION}
        parts = data[len(parent) + 1 :].split("/")
        if len(parts) == 2 and ID_RE.match(parts[1]):
            kind = by_collection(parts[0])
            if parts[0] in REF_ONLY or (kind is not None and (kind.name, parts[1]) in known):
                return {"ref": f"{parts[0]}/{parts[1]}"}
    return data


_Table = list[tuple[str, re.Pattern[str] | None, str]]


def _replacements(variables: Mapping[str, str], anywhere: Collection[str] = ()) -> _Table:
    """(value, pattern for parts or None, NAME), longest values first so they win.

    anywhere: names whose values are replaced wherever they occur (sensitive ones); the
    others only between non-alphanumeric characters (a region "us" stays in "status")."""
    table = []
    for name, value in variables.items():
        if not value:
            continue
        pattern = None
        # Not after a "$" either: "$" + "${NAME}" would read as the escape "$${".
        if name in anywhere and len(value) >= MIN_SCRUB:
            pattern = re.compile(rf"(?<!\$){re.escape(value)}")
        elif len(value) >= MIN_PART:
            pattern = re.compile(rf"(?<![A-Za-z0-9$]){re.escape(value)}(?![A-Za-z0-9])")
        table.append((value, pattern, name))
    return sorted(table, key=lambda t: (-len(t[0]), t[2]))


def templated(text: str, secrets: Mapping[str, str]) -> str | None:
    """text as a ${NAME} template where it holds a sensitive value (its own "${" escaped), else None."""
    table = _replacements(secrets, set(secrets))
    if not any(p is not None and p.search(text) for _, p, _ in table):
        return None
    result: str = _with_vars(text, table)
    return result


def _with_vars(data: Any, table: _Table, key: str = "", secret_table: _Table | None = None) -> Any:
    if isinstance(data, dict):
        return {k: _with_vars(v, table, k, secret_table) for k, v in data.items()}
    if isinstance(data, list):
        return [_with_vars(v, table, key, secret_table) for v in data]
    if isinstance(data, str) and (key in DOCUMENT_FIELDS or key in CODE_FIELDS):
        # Documents and code go to files, which are not substituted: one that holds a
        # sensitive value stays in the YAML file, templated.
        if secret_table and any(p is not None and p.search(data) for _, p, _ in secret_table):
            return _Inline(_with_vars(data, secret_table))
        return data
    if not isinstance(data, str):
        return data
    for value, _, name in table:
        if data == value:
            return "${" + name + "}"
    for value, pattern, name in table:
        if pattern is not None and "$" in value and value in data:
            # A value that holds "${" would be cut apart by the spans below: replace it first.
            return ("${" + name + "}").join(_with_vars(part, table, key) for part in pattern.split(data))
    # What the loader would read as a variable (from "${" to the next "}") is escaped
    # and kept whole; values are replaced only in the text between such spans.
    out, pos = [], 0
    for m in LOADER_VAR.finditer(data):
        out += [_replace_parts(data[pos : m.start()], table), "$" + m.group(0)]
        pos = m.end()
    out.append(_replace_parts(data[pos:], table))
    return "".join(out)


def _replace_parts(text: str, table: _Table) -> str:
    for value, pattern, name in table:
        if pattern is not None and value in text:
            text = pattern.sub("${" + name + "}", text)  # names are [A-Za-z0-9_]: no escapes
    return text


def _externalize(data: dict[str, Any], kind: ResourceKind, stem: str, out: ExportedRepo, up: str = "../") -> dict[str, Any]:
    """Move code and OpenAPI documents to files referenced by {file: ...}."""
    used: set[str] = set()

    def walk(node: Any, path: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(v, path) for v in node]
        if not isinstance(node, dict):
            return node
        result: dict[str, Any] = {}
        for key, value in node.items():
            here = (*path, key)
            if isinstance(value, _Inline):
                result[key] = str(value)
            elif isinstance(value, str) and "\r" not in value and (key in CODE_FIELDS or key in DOCUMENT_FIELDS):
                rel = _file_for(kind, stem, key, value, here, used)
                out.files[rel] = value
                result[key] = {"file": f"{up}{rel}"}
            else:
                result[key] = walk(value, here)
        return result

    walked: dict[str, Any] = walk(data, ())
    return walked


def _file_for(kind: ResourceKind, stem: str, key: str, text: str, path: tuple[str, ...], used: set[str]) -> str:
    folder = "code" if key in CODE_FIELDS else "schemas"
    ext = ".py" if key in CODE_FIELDS else (".json" if text.lstrip().startswith("{") else ".yaml")
    base = stem if kind.bare_document_names else f"{stem}.{kind.name}"
    name = base if base not in used else f"{base}.{'.'.join(path[:-1])}"
    used.add(name)
    return f"{folder}/{name}{ext}"
