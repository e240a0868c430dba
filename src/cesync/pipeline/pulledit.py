"""One resource's changed fields written into the YAML file that defines it (pull's editor).

Walks an update mask's paths down the file's own structure: a ``{file: ...}`` include gets the
remote text written into that file; a ``${VAR}`` placeholder stays when the remote equals its
rendering, else the change is a conflict naming the variable to change (a literal only with
``inline``); ``{ref: kind/id}`` stays a reference when the remote names a resource of this app.
The tree editing itself is core/roundtrip.py's."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import LiteralScalarString

from ..api.jsonvalue import value_at
from ..api.resource import Resource
from ..core.documents import parse_document, url_back
from ..core.normalize import DOCUMENT_FIELDS, canonical
from ..core.roundtrip import (
    KEEP,
    assign,
    compact,
    document_text,
    dump_roundtrip,
    insert,
    is_ref,
    load_roundtrip,
    map_value_spec,
    merge_map,
    merge_seq,
)
from ..core.scrubber import clip
from ..core.walk import specs_along, written_order
from ..core.yamlfile import Path_
from ..core.yamlout import _block_safe
from ..models import FieldSpec, ProtoModel, specs
from ..repo.environments import VAR_ENV_PREFIX, EnvTarget, env_var_name
from ..repo.loading import SourceFile
from ..repo.templating import INCLUDABLE, VAR_RE
from ..sync.export import LOADER_VAR, _restore_documents, templated

if TYPE_CHECKING:
    from .pull import PullResult


class Editor:
    def __init__(self, root: Path, env: EnvTarget, inline: bool, result: PullResult, known: set[str]) -> None:
        self.root, self.env, self.inline, self.result, self.known = root, env, inline, result, known
        self.own_vars: set[str] = set()  # the environment's own vars (the others come from defaults)
        self.sensitive: set[str] = set()  # names whose values must never be printed or written
        self.secrets: dict[str, str] = {}  # their values: written back as ${NAME} wherever they occur

    def resource(self, src: SourceFile, d: Resource, r: Resource, mask: list[str]) -> bool:
        rel = src.doc.file
        edited = self.result.files.get(rel)
        text = edited.replace("\r\n", "\n") if edited else src.path.read_text(encoding="utf-8")
        yaml, tree = load_roundtrip(text)
        # Values as cesync compares them (enum names, no defaults), documents as the server keeps the text.
        remote = _restore_documents(canonical(d.kind, d.id, r.body).body, r.body)
        self.src, self.rid, self.remote, self.parent_dir = src, d.id, remote, src.path.parent
        before = len(self.result.conflicts)
        for dotted in mask:
            path = dotted.split(".")
            self._set(tree, path, value_at(remote, path), tuple(path))
        if len(self.result.conflicts) > before:
            return False
        new_text = dump_roundtrip(yaml, tree, text)
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
            insert(node, key, current, self._model_at(here[:-1]))
        elif not isinstance(current, CommentedMap) or is_ref(current) or _is_include(key, current):
            self._replace(node, key, current, value_at(self.remote, [str(p) for p in here]), here)  # the whole value
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
                    merge_map(current, parse_document(value), lambda c, v, k: self._leaf(c, v, (*full, k)))
                    return
                except ValueError:
                    pass
        if is_ref(current) and value == f"{self.env.parent}/{current['ref']}":
            return  # as written, {ref: ..., owner: ...} included
        if is_ref(current) or (current is None and isinstance(value, str) and self._ref_of(value)):
            ref = self._ref_of(value) if isinstance(value, str) else None
            if ref is not None:
                assign(node, key, CommentedMap(ref=ref), current, self._model_at(full[:-1]))
                return
        spec = self._spec_at(full)
        if isinstance(current, CommentedMap) and isinstance(value, dict):
            if spec is not None and spec.map:
                merge_map(current, value, lambda c, v, k: self._leaf(c, v, (*full, k)), None, map_value_spec(spec))
            else:
                merge_map(current, value, lambda c, v, k: self._leaf(c, v, (*full, k)), spec.message if spec else None)
            return
        if isinstance(current, CommentedSeq) and isinstance(value, list):
            merge_seq(current, value, lambda c, v, i: self._leaf(c, v, (*full, i)), spec)
            return
        new = self._leaf(current, value, full)
        if new is not KEEP:
            assign(node, key, compact(new, spec), current, self._model_at(full[:-1]))

    def _leaf(self, current: Any, value: Any, full: Path_) -> Any:
        """What to write for one value: KEEP when the file already renders to it."""
        if is_ref(current) and value == f"{self.env.parent}/{current['ref']}":
            return KEEP  # a {ref:} (another owner's too) that still names what the app names
        if isinstance(current, str) and VAR_RE.search(current):
            rendered = self._render(current)
            if rendered == value:
                return KEEP
            hidden = sorted({m.group(2) for m in VAR_RE.finditer(current) if not m.group(1)} & self.sensitive)
            if hidden:  # neither the app's value nor a literal of it may reach the output or the repo
                self._conflict(
                    full,
                    f"the app's value differs from {current!r} rendered for environment '{self.env.name}'; "
                    f"{', '.join(hidden)} {'is a sensitive variable' if len(hidden) == 1 else 'are sensitive variables'}, "
                    "so pull writes no literal (not even with --inline): set "
                    f"{' and '.join(self._var_home(n) for n in hidden)} to the app's value, or change the app",
                )
                return KEEP
            if not self.inline:
                self._conflict(full, self._var_message(current, value))
                return KEEP
        if current == value and type(current) is type(value):
            return KEEP
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
        for variable in (env_var_name(self.env.name, name), VAR_ENV_PREFIX + name):
            if variable in os.environ:
                return f"the process environment variable {variable}"
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
        spec = value_at(self.remote, [str(p) for p in full[:-1]])
        url = spec.get("url") if isinstance(spec, dict) else None
        url = url or self.env.urls.get(self.rid)
        return url_back(text, url) if isinstance(url, str) else text

    def _include(self, current: CommentedMap, value: Any, full: Path_) -> None:
        target = (self.parent_dir / str(current["file"])).resolve()
        rel = str(target.relative_to(self.root.resolve()))
        staged = self.result.files.get(rel)
        if staged is None:
            with open(target, encoding="utf-8", newline="") as fh:  # as on disk: CRLF seen, not translated
                staged = fh.read()
        # A CRLF checkout (git autocrlf) keeps CRLF: the edit is one line, not every line's ending.
        crlf = "\r\n" in staged
        old = staged.replace("\r\n", "\n")
        text = str(value).replace("\r\n", "\n")
        if full[-1] in DOCUMENT_FIELDS:
            text = self._env_var_back(full, text)
            text = document_text(old, text, rel)
        if text != old:
            self.result.files[rel] = text.replace("\n", "\r\n") if crlf else text

    def _spec_at(self, path: Path_) -> FieldSpec | None:
        found = list(specs_along(self.src.kind.model, [str(p) for p in path]))
        return found[-1] if found and len(found) == len(path) else None

    def _model_at(self, path: Path_) -> dict[str, int]:
        """The rank of each field of the message at path (where a new key goes)."""
        model: type[ProtoModel] | None = self.src.kind.model
        if path:
            spec = self._spec_at(path)
            model = spec.message if spec is not None and not spec.map else None
        return written_order(specs(model)) if model is not None else {}


def _ref_in(value: str, parent: str, known: set[str]) -> str | None:
    """collection/id when value is the full name of a resource the repo defines or the app holds."""
    prefix = parent + "/"
    if value.startswith(prefix):
        parts = value[len(prefix) :].split("/")
        if len(parts) == 2 and "/".join(parts) in known:
            return "/".join(parts)
    return None


def _is_include(key: str, value: Any) -> bool:
    return key in INCLUDABLE and isinstance(value, dict) and set(value) == {"file"}


def _short(value: Any) -> str:
    return clip(json.dumps(value, ensure_ascii=False), 80)


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


def _uses_crlf(path: Path) -> bool:
    with open(path, "rb") as fh:
        return b"\r\n" in fh.read(65536)
