"""Remote state back into the repo's files as minimal edits: the reverse of ``plan``.

For each managed resource whose remote differs from what the repo renders, the
changed fields (the ``updateMask`` paths of the diff, which stop at the first list,
map or document) are written into the YAML file that defines them with ruamel.yaml
round-trip, so comments, key order, quoting and flow/block style survive and only the
changed values move. On the way down a path:

- a ``{file: ...}`` include gets the remote text written into that file (Python as
  Python, an OpenAPI document in its own format: YAML by a round-trip edit, JSON as
  JSON) and the tool file keeps the include;
- a ``${VAR}`` placeholder stays when the remote equals its rendering; otherwise the
  change is a :class:`Conflict` naming the variable of the environment to change
  (written as a literal only with ``inline``);
- ``{ref: kind/id}`` stays a reference when the remote names a resource of this app.

Remote-only resources become new files laid out as ``export`` writes them; files of
resources gone from the remote are deleted only with ``prune``. Nothing here writes:
:func:`pull_changes` returns the new text of every file, :func:`write_files` writes them.
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import (
    DoubleQuotedScalarString,
    FoldedScalarString,
    LiteralScalarString,
    SingleQuotedScalarString,
)

from ..api.kinds import KINDS, by_collection
from ..api.protojson import is_default
from ..api.resource import Resource
from ..core.diff import _get as _get
from ..core.diff import diff_resource
from ..core.documents import parse_document
from ..core.normalize import DOCUMENT_FIELDS, canonical
from ..core.normalize import _scalar as _proto_scalar
from ..core.sensitive import occurrences
from ..core.walk import specs_along, written_order
from ..core.yamlfile import Path_
from ..core.yamlout import _block_safe
from ..errors import CesyncError, Problem
from ..models import FieldSpec, Kind, ProtoModel, specs
from ..repo.environments import VAR_ENV_PREFIX, EnvTarget
from ..repo.loading import SourceFile
from ..repo.repo import Repo
from ..repo.templating import ENV_VAR, INCLUDABLE, VAR_RE
from ..sync.export import LOADER_VAR, _restore_documents, export_repo, templated

__all__ = ["PullResult", "pull_changes", "unified_diffs", "verify", "write_files"]


@dataclass
class PullResult:
    files: dict[str, str | None] = field(default_factory=dict)  # repo-relative path -> new text (None: delete)
    conflicts: list[Problem] = field(default_factory=list)  # remote values that differ from a rendered ${VAR}
    conflicted: list[str] = field(default_factory=list)  # kind/id of the resources left as they are for a conflict
    updated: list[str] = field(default_factory=list)  # kind/id
    created: list[str] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)  # kind/id (file) of resources no longer in the app
    notes: list[str] = field(default_factory=list)


def pull_changes(
    repo: Repo,
    env: EnvTarget,
    desired: list[Resource],
    remote: list[Resource],
    *,
    wanted: set[tuple[str, str]] | None = None,
    prune: bool = False,
    inline: bool = False,
    secrets: Mapping[str, str] | None = None,
) -> PullResult:
    """The edits that make the repo render what the app holds (pure apart from reading the repo).

    secrets: the sensitive variables' values; a new file names them as ${NAME}, and a field
    rendered from one is never written as a literal (not even with inline).
    """
    result = PullResult()
    sources = {(f.kind, f.id): f for f in repo.files}
    remote_by = {(r.kind, r.id): r for r in remote}
    known = {f"{KINDS[k].collection}/{i}" for k, i in sources} | {f"{KINDS[r.kind].collection}/{r.id}" for r in remote}
    editor = _Editor(repo.root, env, inline, result, known)
    own = repo.config.environments.get(env.name)
    editor.own_vars = set(own.vars) if own is not None else set()
    editor.sensitive = {*repo.config.defaults.sensitive, *(own.sensitive if own is not None else ())}
    editor.secrets = dict(secrets or {})

    def take(kind: str, rid: str) -> bool:
        return wanted is None or (kind, rid) in wanted

    for d in desired:
        if not take(d.kind, d.id):
            continue
        r = remote_by.get((d.kind, d.id))
        src = sources[(d.kind, d.id)]
        if r is None:
            result.gone.append(f"{d.kind}/{d.id} ({src.doc.file})")
            if prune:
                result.files[src.doc.file] = None
                for inc in _include_files(src, repo.root):
                    if not any(inc in _include_files(o, repo.root) for o in repo.files if o is not src):
                        result.files[inc] = None
            continue
        mask = diff_resource(d.kind, d.id, d.body, r.body).update_mask
        if not mask:
            continue
        # A conflict leaves this resource's file as it is; every other resource is still pulled.
        before = dict(result.files)
        if editor.resource(src, d, r, mask) and not _kept_secret_out(repo.root, before, result, secrets or {}):
            result.updated.append(f"{d.kind}/{d.id}")
        else:
            result.conflicted.append(f"{d.kind}/{d.id}")
    # The app's settings come back only into an app.yaml the repo has (a repo may leave them to the console).
    new = [r for r in remote if (r.kind, r.id) not in sources and take(r.kind, r.id) and not KINDS[r.kind].singleton]
    if new:
        _new_files(repo, env, new, remote, result, secrets or {})
    return result


def _kept_secret_out(root: Path, before: dict[str, str | None], result: PullResult, secrets: Mapping[str, str]) -> bool:
    """Whether one resource's edits put a sensitive value into a file more often than it was
    there (one the edits could not write as ${NAME}: an included file, text after a "$"): then
    its edits are taken back and each such file is a conflict."""
    leaked: list[tuple[str, list[str]]] = []
    for rel, text in sorted(result.files.items()):
        if text is None or before.get(rel) == text:
            continue
        path = root / rel
        old = before.get(rel) or (path.read_text(encoding="utf-8") if path.is_file() else "")
        names = sorted(n for n, v in secrets.items() if occurrences(text, v) > occurrences(old, v))
        if names:
            leaked.append((rel, names))
    if not leaked:
        return False
    result.files.clear()
    result.files.update(before)
    for rel, names in leaked:
        result.conflicts.append(
            Problem(
                rel,
                1,
                1,
                f"the app's text for this file holds the value of the sensitive variable {', '.join(names)} where "
                "pull cannot write it as ${NAME} (an included file takes no variables, or it follows a '$'); the file "
                "is left as it is. Change that text in the app, or keep the field in the YAML file as a template",
            )
        )
    return True


def _new_files(
    repo: Repo, env: EnvTarget, new: list[Resource], remote: list[Resource], result: PullResult, secrets: Mapping[str, str]
) -> None:
    known = {(r.kind, r.id) for r in remote}
    exported = export_repo(
        new, parent=env.parent, variables=env.vars, urls=env.urls, config_text="", known=known, sensitive=secrets
    )
    for rel, text in exported.files.items():
        if rel in ("cesync.yaml", ".gitignore"):
            continue
        if rel.endswith(".schema.json"):
            continue  # the JSON Schemas are the repo's own business (cesync init, cesync schema)
        if text.startswith("# yaml-language-server:") and not (repo.root / "schemas" / _schema_of(rel)).is_file():
            text = text.split("\n", 1)[1]  # a modeline only where it resolves
        if (repo.root / rel).exists() or rel in result.files:
            result.conflicts.append(Problem(rel, 1, 1, "a new remote resource would be written here, but the file exists"))
            continue
        result.files[rel] = text
    result.notes += exported.notes
    result.created += [f"{r.kind}/{r.id}" for r in new]


def _schema_of(rel: str) -> str:
    """The schema file an exported file's modeline names: tools/x.yaml -> tool.schema.json, app.yaml -> app.schema.json."""
    kind = by_collection(rel.split("/")[0]) if "/" in rel else None
    return f"{kind.name if kind else rel.rsplit('.', 1)[0]}.schema.json"


def _include_files(src: SourceFile, root: Path) -> set[str]:
    found: set[str] = set()

    def walk(node: Any, key: str | None) -> None:
        if isinstance(node, dict):
            if key in INCLUDABLE and set(node) == {"file"} and isinstance(node["file"], str):
                target = (src.path.parent / node["file"]).resolve()
                if target.is_relative_to(root):
                    found.add(str(target.relative_to(root)))
                return
            for k, v in node.items():
                walk(v, k)
        elif isinstance(node, list):
            for v in node:
                walk(v, key)

    walk(src.doc.data, None)
    return found


# --- editing one resource's file ---------------------------------------------------------------


class _Editor:
    def __init__(self, root: Path, env: EnvTarget, inline: bool, result: PullResult, known: set[str]) -> None:
        self.root, self.env, self.inline, self.result, self.known = root, env, inline, result, known
        self.own_vars: set[str] = set()  # the environment's own vars (the others come from defaults)
        self.sensitive: set[str] = set()  # names whose values must never be printed or written
        self.secrets: dict[str, str] = {}  # their values: written back as ${NAME} wherever they occur

    def resource(self, src: SourceFile, d: Resource, r: Resource, mask: list[str]) -> bool:
        rel = src.doc.file
        edited = self.result.files.get(rel)
        text = edited.replace("\r\n", "\n") if edited else src.path.read_text(encoding="utf-8")
        yaml, tree = _load_rt(text)
        # Values as cesync compares them (enum names, no defaults), documents as the server keeps the text.
        remote = _restore_documents(canonical(d.kind, d.id, r.body).body, r.body)
        self.src, self.rid, self.remote, self.parent_dir = src, d.id, remote, src.path.parent
        before = len(self.result.conflicts)
        for dotted in mask:
            path = dotted.split(".")
            self._set(tree, path, _get(remote, path), tuple(path))
        if len(self.result.conflicts) > before:
            return False
        new_text = _dump_rt(yaml, tree, text)
        if new_text != text:  # a CRLF file stays CRLF: only the edited lines may differ
            self.result.files[rel] = new_text.replace("\n", "\r\n") if _uses_crlf(src.path) else new_text
        return True

    def _set(self, node: CommentedMap, path: list[str], value: Any, full: Path_) -> None:
        """Write the remote value at path (absent: remove the key), walking the file's own structure."""
        key, rest = path[0], path[1:]
        current = node.get(key)
        if not rest:
            self._replace(node, key, current, value, full)
            return
        here = full[: len(full) - len(rest)]
        if current is None:
            if value is None:
                return
            current = CommentedMap()
            _insert(node, key, current, self._model_at(here[:-1]))
        elif not isinstance(current, CommentedMap) or _is_ref(current) or _is_include(key, current):
            self._replace(node, key, current, _get(self.remote, [str(p) for p in here]), here)  # the whole value
            return
        self._set(current, rest, value, full)
        if not current:
            del node[key]

    def _replace(self, node: Any, key: Any, current: Any, value: Any, full: Path_) -> None:
        if value is None:
            if isinstance(node, dict) and key in node:
                if isinstance(current, str) and VAR_RE.search(current) and not self.inline:
                    self._conflict(full, f"the remote has no '{key}', but the file sets it from a variable")
                    return
                del node[key]
            return
        if _is_include(str(key), current):
            self._include(current, value, full)
            return
        if str(key) in DOCUMENT_FIELDS and isinstance(value, str):
            value = self._env_var_back(full, value)
            if isinstance(current, CommentedMap):  # mapping-form schema: merge by meaning
                try:
                    _merge_map(current, parse_document(value), lambda c, v, k: self._leaf(c, v, (*full, k)))
                    return
                except ValueError:
                    pass
        if _is_ref(current) or (current is None and isinstance(value, str) and self._ref_of(value)):
            ref = self._ref_of(value) if isinstance(value, str) else None
            if ref is not None:
                _assign(node, key, CommentedMap(ref=ref), current, self._model_at(full[:-1]))
                return
        spec = self._spec_at(full)
        if isinstance(current, CommentedMap) and isinstance(value, dict):
            if spec is not None and spec.map:
                _merge_map(current, value, lambda c, v, k: self._leaf(c, v, (*full, k)), None, _map_value_spec(spec))
            else:
                _merge_map(current, value, lambda c, v, k: self._leaf(c, v, (*full, k)), spec.message if spec else None)
            return
        if isinstance(current, CommentedSeq) and isinstance(value, list):
            _merge_seq(current, value, lambda c, v, i: self._leaf(c, v, (*full, i)), spec)
            return
        new = self._leaf(current, value, full)
        if new is not _KEEP:
            _assign(node, key, _compact(new, spec), current, self._model_at(full[:-1]))

    def _leaf(self, current: Any, value: Any, full: Path_) -> Any:
        """What to write for one value: _KEEP when the file already renders to it."""
        if isinstance(current, str) and VAR_RE.search(current):
            rendered = self._render(current)
            if rendered == value:
                return _KEEP
            hidden = sorted({m.group(2) for m in VAR_RE.finditer(current) if not m.group(1)} & self.sensitive)
            if hidden:  # neither the app's value nor a literal of it may reach the output or the repo
                self._conflict(
                    full,
                    f"the app's value differs from {current!r} rendered for environment '{self.env.name}'; "
                    f"{', '.join(hidden)} {'is a sensitive variable' if len(hidden) == 1 else 'are sensitive variables'}, "
                    "so pull writes no literal (not even with --inline): set "
                    f"{' and '.join(self._var_home(n) for n in hidden)} to the app's value, or change the app",
                )
                return _KEEP
            if not self.inline:
                self._conflict(full, self._var_message(current, value))
                return _KEEP
        if current == value and type(current) is type(value):
            return _KEEP
        return _portable(value, self.env.parent, self.known, self.secrets)

    def _render(self, text: str) -> str:
        def sub(m: re.Match[str]) -> str:
            if m.group(1):
                return m.group(0)[1:]
            value = self.env.var(m.group(2))
            return m.group(0) if value is None else value

        return VAR_RE.sub(sub, text)

    def _var_message(self, template: str, value: Any) -> str:
        names = [m.group(2) for m in VAR_RE.finditer(template) if not m.group(1)]
        parts = re.split(r"(\$\$?\{[^}]*\}?)", template)
        pattern = "".join("(.*)" if p.startswith("${") else re.escape(p[1:] if p.startswith("$$") else p) for p in parts)
        match = re.fullmatch(pattern, value, re.S) if isinstance(value, str) else None
        found = list(zip(names, match.groups(), strict=False)) if match and len(names) == len(match.groups()) else []
        values = dict(found)
        # Some value of each variable renders the remote text (the same one where a name repeats).
        if found and all(values[n] == v for n, v in found):
            wanted = "; ".join(f"{self._var_home(n)} to {v!r}" for n, v in values.items())
            return (
                f"the remote value {_short(value)} differs from {template!r} rendered for environment "
                f"'{self.env.name}'; set {wanted} (or pass --inline to write the literal)"
            )
        plural = len(set(names)) != 1
        return (
            f"the remote value {_short(value)} differs from {template!r} rendered for environment '{self.env.name}', "
            f"and no value of {', '.join(dict.fromkeys(names))} can produce it (the text around "
            f"{'the placeholders' if plural else 'the placeholder'} differs): edit the file to match the app, "
            "or pass --inline to write the remote value as a literal"
        )

    def _var_home(self, name: str) -> str:
        if name in self.env.overrides:
            return f"the value given with --var/--var-file for {name}"
        if VAR_ENV_PREFIX + name in os.environ:
            return f"the process environment variable {VAR_ENV_PREFIX}{name}"
        if name in self.own_vars:
            return f"environments.{self.env.name}.vars.{name}"
        return f"defaults.vars.{name}"

    def _conflict(self, full: Path_, message: str) -> None:
        self.result.conflicts.append(
            self.src.doc.problem(full, f"{self.src.kind} {self.rid}: {'.'.join(map(str, full))}: {message}")
        )

    def _ref_of(self, value: str) -> str | None:
        return _ref_in(value, self.env.parent, self.known)

    def _env_var_back(self, full: Path_, text: str) -> str:
        spec = _get(self.remote, [str(p) for p in full[:-1]])
        url = spec.get("url") if isinstance(spec, dict) else None
        url = url or self.env.urls.get(self.rid)
        if isinstance(url, str) and url and url in text:
            return text.replace(url, ENV_VAR)
        return text

    def _include(self, current: CommentedMap, value: Any, full: Path_) -> None:
        target = (self.parent_dir / str(current["file"])).resolve()
        rel = str(target.relative_to(self.root.resolve()))
        old = self.result.files.get(rel) or target.read_text(encoding="utf-8")
        text = str(value)
        if full[-1] in DOCUMENT_FIELDS:
            text = self._env_var_back(full, text)
            text = _document_text(old, text, rel)
        if text != old:
            self.result.files[rel] = text

    def _spec_at(self, path: Path_) -> FieldSpec | None:
        found = list(specs_along(KINDS[self.src.kind].model, [str(p) for p in path]))
        return found[-1] if found and len(found) == len(path) else None

    def _model_at(self, path: Path_) -> dict[str, int]:
        """The rank of each field of the message at path (where a new key goes)."""
        model: type[ProtoModel] | None = KINDS[self.src.kind].model
        if path:
            spec = self._spec_at(path)
            model = spec.message if spec is not None and not spec.map else None
        return written_order(specs(model)) if model is not None else {}


class _Keep:
    pass


_KEEP: Any = _Keep()


def _ref_in(value: str, parent: str, known: set[str]) -> str | None:
    """kind/id when value is the full name of an agent, or of a tool or toolset the repo will define."""
    prefix = parent + "/"
    if value.startswith(prefix):
        parts = value[len(prefix) :].split("/")
        if len(parts) == 2 and (parts[0] == "agents" or "/".join(parts) in known):
            return "/".join(parts)
    return None


def _is_ref(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"ref"}


def _is_include(key: str, value: Any) -> bool:
    return key in INCLUDABLE and isinstance(value, dict) and set(value) == {"file"}


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def _portable(value: Any, parent: str, known: set[str], secrets: Mapping[str, str] | None = None) -> Any:
    """A remote value as the tool file writes it: refs for this app's names, ${ escaped, | blocks,
    a sensitive value as its ${NAME} wherever it occurs."""
    if isinstance(value, dict):
        return {k: _portable(v, parent, known, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_portable(v, parent, known, secrets) for v in value]
    if isinstance(value, str):
        ref = _ref_in(value, parent, known)
        if ref is not None:
            return CommentedMap(ref=ref)
        template = templated(value, secrets) if secrets else None
        value = template if template is not None else LOADER_VAR.sub(lambda m: "$" + m.group(0), value)
        if "\n" in value and _block_safe(value):
            return LiteralScalarString(value)
    return value


def _styled(new: Any, old: Any) -> Any:
    """The new scalar in the old one's quoting or block style, where it can be."""
    if not isinstance(new, str) or isinstance(new, LiteralScalarString):
        return new
    if isinstance(old, LiteralScalarString | FoldedScalarString) and "\n" in new and _block_safe(new):
        return LiteralScalarString(new) if isinstance(old, LiteralScalarString) else FoldedScalarString(new)
    if isinstance(old, DoubleQuotedScalarString):
        return DoubleQuotedScalarString(new)
    if isinstance(old, SingleQuotedScalarString) and "\n" not in new:
        return SingleQuotedScalarString(new)
    return new


def _assign(node: Any, key: Any, new: Any, old: Any, order: dict[str, int]) -> None:
    new = _styled(new, old)
    if isinstance(node, CommentedMap) and key not in node:
        _insert(node, key, new, order)
    else:
        node[key] = new


def _insert(node: CommentedMap, key: str, value: Any, order: dict[str, int]) -> None:
    """A new key where the schema puts it among the keys already there."""
    rank = order.get(key, len(order))
    pos = len(node)
    for i, existing in enumerate(node):
        if order.get(str(existing), len(order)) > rank:
            pos = i
            break
    node.insert(pos, key, value)


def _merge_map(
    node: CommentedMap, value: dict[str, Any], leaf: Any, model: type[ProtoModel] | None = None, values: FieldSpec | None = None
) -> None:
    """Make a mapping of the file equal value, touching only what differs.

    Not a :class:`~cesync.core.walk.SpecWalker` pass: the walker walks one value and
    builds a new one, this walks two (the file's ruamel nodes and the remote value) and
    edits the first in place, led by the file's structure (its keys, {ref:} and {file:}
    nodes, list items by position, quoting kept); a field's spec is only looked up here.

    model: the message the mapping is (its keys are fields); values: the field spec of a
    proto map's values. Equality of scalars is by their proto meaning (an enum number
    and its name, 1.5s and 1.500s); a default-valued key the remote leaves out stays.
    """
    table = specs(model) if model is not None else {}
    for key in [k for k in node if k not in value]:
        spec = table.get(str(key))
        if spec is not None and _scalar_spec(spec) and is_default(node[key], spec.kind, spec.enum):
            continue
        del node[key]
    for key, v in value.items():
        spec = values if values is not None else table.get(key)
        current = node.get(key)
        sub = spec.message if spec is not None else None
        if isinstance(current, CommentedMap) and isinstance(v, dict) and not _is_ref(current):
            if spec is not None and spec.map and values is None:
                _merge_map(current, v, leaf, None, _map_value_spec(spec))
            else:
                _merge_map(current, v, leaf, sub)
        elif isinstance(current, CommentedSeq) and isinstance(v, list):
            _merge_seq(current, v, lambda c, x, i, k=key: leaf(c, x, k), spec)
        elif spec is not None and _scalar_spec(spec) and _same(current, v, spec):
            continue
        else:
            new = leaf(current, v, key)
            if new is not _KEEP:
                _assign(node, key, _compact(new, spec), current, {})


def _merge_seq(node: CommentedSeq, value: list[Any], leaf: Any, spec: FieldSpec | None = None) -> None:
    del node[len(value) :]
    sub = spec.message if spec is not None else None
    for i, v in enumerate(value):
        if i >= len(node):
            node.append(_portable_plain(v))
            continue
        current = node[i]
        if isinstance(current, CommentedMap) and isinstance(v, dict):
            _merge_map(current, v, lambda c, x, k, i=i: leaf(c, x, i), sub)
        elif isinstance(current, CommentedSeq) and isinstance(v, list):
            _merge_seq(current, v, leaf)
        elif spec is not None and sub is None and _same(current, v, spec):
            continue
        else:
            new = leaf(current, v, i)
            if new is not _KEEP:
                node[i] = _styled(_compact(new, spec), current)


def _scalar_spec(spec: FieldSpec) -> bool:
    return spec.message is None and not spec.repeated and not spec.map and spec.kind not in (Kind.STRUCT, Kind.VALUE)


def _map_value_spec(spec: FieldSpec) -> FieldSpec:
    """The spec of one value of a proto map field."""
    return dataclasses.replace(spec, map=False, repeated=False)


def _same(current: Any, value: Any, spec: FieldSpec) -> bool:
    if isinstance(current, dict | list) or isinstance(value, dict | list):
        return False
    a, b = _proto_scalar(current, spec.kind, spec.enum), _proto_scalar(value, spec.kind, spec.enum)
    return bool(a == b)


def _compact(value: Any, spec: FieldSpec | None) -> Any:
    """A duration as people write it: 1.5s, not the server's 1.500s."""
    if spec is not None and spec.kind is Kind.DURATION and isinstance(value, str) and "." in value:
        return re.sub(r"\.?0+s$", "s", value)
    return value


def _portable_plain(value: Any) -> Any:
    if isinstance(value, str) and "\n" in value and _block_safe(value):
        return LiteralScalarString(value)
    return value


def _plain_leaf(current: Any, value: Any, _key: Any) -> Any:
    return _KEEP if current == value and type(current) is type(value) else _portable_plain(value)


def _document_text(old: str, new: str, rel: str) -> str:
    """An included OpenAPI document rewritten in its own format, minimally for YAML."""
    try:
        new_data, old_data = parse_document(new), parse_document(old)
    except ValueError:
        return new
    if new_data == old_data:
        return old
    if rel.endswith(".json") or old.lstrip().startswith("{"):
        edited = _json_in_place(old, old_data, new_data)
        if edited is not None:
            return edited
        indent = _json_indent(old)
        return json.dumps(new_data, indent=indent, ensure_ascii=False) + ("\n" if old.endswith("\n") else "")
    yaml, tree = _load_rt(old)
    if isinstance(tree, CommentedMap) and isinstance(new_data, dict):
        _merge_map(tree, new_data, _plain_leaf)
        return _dump_rt(yaml, tree, old)
    return new


def _json_in_place(text: str, old: Any, new: Any) -> str | None:
    """Changed scalars of a JSON document replaced where they are written; None when that cannot be done."""
    changes: list[tuple[str, Any, Any]] = []
    if not _scalar_changes(old, new, "", changes):
        return None
    for key, before, after in changes:
        spellings = {json.dumps(before, ensure_ascii=False), json.dumps(before)}
        hits = [
            m for spelled in spellings for m in re.finditer(re.escape(json.dumps(key)) + r"(\s*:\s*)" + re.escape(spelled), text)
        ]
        if len(hits) != 1:
            return None
        m = hits[0]
        text = text[: m.start()] + json.dumps(key) + m.group(1) + json.dumps(after, ensure_ascii=False) + text[m.end() :]
    try:
        return text if json.loads(text) == new else None
    except ValueError:
        return None


def _scalar_changes(old: Any, new: Any, key: str, out: list[tuple[str, Any, Any]]) -> bool:
    """Collect (key, old, new) of changed scalar values; False when the shapes differ."""
    if isinstance(old, dict) and isinstance(new, dict):
        return set(old) == set(new) and all(_scalar_changes(old[k], new[k], k, out) for k in old)
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(_scalar_changes(a, b, key, out) for a, b in zip(old, new, strict=True))
    if isinstance(old, dict | list) or isinstance(new, dict | list) or not key:
        return False
    if old != new or type(old) is not type(new):
        out.append((key, old, new))
    return True


def _json_indent(text: str) -> int | None:
    match = re.search(r"\n( +)\S", text)
    return len(match.group(1)) if match else None


# --- round-trip loading and dumping --------------------------------------------------------------


def _read_exact(path: Path) -> str:
    """The text with its own line endings, so a diff shows the bytes that change."""
    with open(path, encoding="utf-8", newline="") as fh:
        return fh.read()


def _uses_crlf(path: Path) -> bool:
    with open(path, "rb") as fh:
        return b"\r\n" in fh.read(65536)


def _load_rt(text: str) -> tuple[YAML, Any]:
    yaml = YAML(typ="rt", pure=True)
    yaml.preserve_quotes = True
    yaml.width = 4096
    mapping, sequence, offset = _indents(text)
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    yaml.brace_single_entry_mapping_in_flow_sequence = True  # [{ref: x}] stays so, not [ref: x]
    return yaml, yaml.load(text)


def _indents(text: str) -> tuple[int, int, int]:
    """(mapping, sequence, offset) as the file already writes them (cesync's own style by default)."""
    mapping, sequence, offset = 2, 4, 2
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    for prev, line in itertools.pairwise(lines):
        p_ind = len(prev) - len(prev.lstrip())
        if prev.lstrip().startswith("- "):  # "- key:" opens a mapping at the key's column, not the dash's
            p_ind += 2
        ind = len(line) - len(line.lstrip())
        if prev.rstrip().endswith(":") and ind > p_ind:
            if line.lstrip().startswith("- "):
                offset = ind - p_ind
                sequence = offset + 2
            else:
                mapping = ind - p_ind
                break
    return mapping, sequence, offset


def _dump_rt(yaml: YAML, tree: Any, original: str) -> str:
    buf = StringIO()
    yaml.dump(tree, buf)
    text = buf.getvalue()
    if original.startswith("\ufeff"):
        text = "\ufeff" + text
    return text


# --- writing ------------------------------------------------------------------------------------


def unified_diffs(root: Path, files: Mapping[str, str | None]) -> str:
    out: list[str] = []
    for rel in sorted(files):
        path = root / rel
        old = _read_exact(path) if path.is_file() else ""
        new = files[rel] or ""
        a = f"a/{rel}" if path.is_file() else "/dev/null"
        b = f"b/{rel}" if files[rel] is not None else "/dev/null"
        out += difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), a, b)
        if out and not out[-1].endswith("\n"):
            out[-1] += "\n\\ No newline at end of file\n"
    return "".join(out)


def write_files(root: Path, files: Mapping[str, str | None]) -> None:
    """Every new text to a temporary file first, then renamed into place; deletions last."""
    staged: list[tuple[Path, Path]] = []
    inside = root.resolve()
    try:
        for rel, text in sorted(files.items()):
            if text is None:
                continue
            path = root / rel
            if not path.resolve().is_relative_to(inside):
                raise CesyncError(
                    f"{rel}: resolves outside the repo (a symlinked folder or file); pull writes only inside "
                    "the repo. Nothing was written"
                )
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.cesync-tmp")
            tmp.unlink(missing_ok=True)  # a planted symlink by that name would take the write elsewhere
            with open(tmp, "x", encoding="utf-8", newline="") as fh:
                fh.write(text)
            staged.append((tmp, path))
    except BaseException:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        raise
    for tmp, path in staged:
        os.replace(tmp, path)
    for rel, text in files.items():
        if text is None:
            (root / rel).unlink(missing_ok=True)


def verify(
    root: Path, files: Mapping[str, str | None], env: EnvTarget, remote: list[Resource], wanted: set[str] | None
) -> list[str]:
    """Apply the edits to a copy of the repo and plan it: what would still differ (empty: the pull is exact).

    Raises ConfigError when the edited repo would not validate.
    """
    import shutil
    import tempfile

    from .workflow import plan_folder

    with tempfile.TemporaryDirectory(prefix="cesync-pull-") as tmp:
        staged = Path(tmp) / "repo"
        shutil.copytree(root, staged, symlinks=True, ignore=shutil.ignore_patterns(".git", ".cesync", ".venv"))
        write_files(staged, files)
        plan = plan_folder(staged, env.name, remote, prune=False, variables=dict(env.overrides))
    return [
        f"{c.kind} {c.id}: {', '.join(f.path for f in c.fields) or c.action}"
        for c in plan.changes
        if c.action != "create" or any(r.kind == c.kind and r.id == c.id for r in remote)
        if wanted is None or c.key in wanted
    ]
