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
:func:`pull_changes` returns the new text of every file, ``repo.files.write_files`` writes them.
The file editing is pulledit.py's (one resource's file) on core/roundtrip.py (the YAML tree)."""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..api.kinds import ResourceKind, by_collection
from ..api.resource import Resource
from ..core.diff import diff_resource
from ..core.documents import unreadable
from ..core.scrubber import Scrubber, occurrences
from ..errors import Problem
from ..repo.environments import EnvTarget
from ..repo.files import write_files
from ..repo.loading import SourceFile
from ..repo.repo import Repo
from ..repo.templating import INCLUDABLE
from ..sync.export import export_repo
from .pulledit import Editor

__all__ = ["PullResult", "pull_changes", "unified_diffs", "verify"]

log = logging.getLogger(__name__)


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
    scrubber: Scrubber | None = None,
) -> PullResult:
    """The edits that make the repo render what the app holds (pure apart from reading the repo).

    secrets: the sensitive variables' values; a new file names them as ${NAME}, and a field
    rendered from one is never written as a literal (not even with inline).
    """
    result = PullResult()
    sources = {f.key: f for f in repo.files}
    remote_by = {r.key: r for r in remote}
    known = {f"{f.kind.collection}/{f.id}" for f in repo.files} | {f"{r.kind.collection}/{r.id}" for r in remote}
    editor = Editor(repo.root, env, inline, result, known)
    own = repo.config.environments.get(env.name)
    editor.own_vars = set(own.vars) if own is not None else set()
    editor.sensitive = {*repo.config.defaults.sensitive, *(own.sensitive if own is not None else ())}
    editor.secrets = dict(secrets or {})

    def take(kind: ResourceKind, rid: str) -> bool:
        return wanted is None or (kind.name, rid) in wanted

    for d in desired:
        if not take(d.kind, d.id):
            continue
        r = remote_by.get(d.key)
        src = sources[d.key]
        if r is None:
            log.debug("pull: %s %s: not in the app: %s", d.kind, d.id, "its file goes (--prune)" if prune else "its file stays")
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
        if bad := unreadable(r.body):
            log.debug("pull: %s %s: the app's copy cannot be read: its file stays", d.kind, d.id)
            result.notes.append(_unreadable_note(r, bad))
            result.conflicted.append(f"{d.kind}/{d.id}")
            continue
        # A conflict leaves this resource's file as it is; every other resource is still pulled.
        before = dict(result.files)
        if editor.resource(src, d, r, mask) and not _kept_secret_out(repo.root, before, result, secrets or {}):
            log.debug("pull: %s %s: %s written back into %s", d.kind, d.id, ", ".join(mask), src.doc.file)
            result.updated.append(f"{d.kind}/{d.id}")
        else:
            log.debug("pull: %s %s: a conflict in %s: its file stays", d.kind, d.id, src.doc.file)
            result.conflicted.append(f"{d.kind}/{d.id}")
    # The app's settings come back only into an app.yaml the repo has (a repo may leave them to the console).
    new = [r for r in remote if r.key not in sources and take(r.kind, r.id) and not r.kind.singleton]
    for r in [r for r in new if unreadable(r.body)]:
        result.notes.append(_unreadable_note(r, unreadable(r.body)))
        new.remove(r)
    if new:
        _new_files(repo, env, new, remote, result, secrets or {}, scrubber)
    return result


def _unreadable_note(r: Resource, bad: list[str]) -> str:
    return (
        f"left {r.kind} {r.id} out: the app's {'; '.join(bad)}; fix it in the app (or write the resource in the repo and apply)"
    )


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
    repo: Repo,
    env: EnvTarget,
    new: list[Resource],
    remote: list[Resource],
    result: PullResult,
    secrets: Mapping[str, str],
    scrubber: Scrubber | None,
) -> None:
    known = {r.key for r in remote}
    exported = export_repo(
        new,
        parent=env.parent,
        variables=env.vars,
        urls=env.urls,
        config_text="",
        known=known,
        sensitive=secrets,
        scrubber=scrubber,
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


def _read_exact(path: Path) -> str:
    """The text with its own line endings, so a diff shows the bytes that change."""
    with open(path, encoding="utf-8", newline="") as fh:
        return fh.read()


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


def verify(
    root: Path,
    files: Mapping[str, str | None],
    env: EnvTarget,
    remote: list[Resource],
    wanted: set[str] | None,
    scrubber: Scrubber,
) -> list[str]:
    """Apply the edits to a copy of the repo and plan it: what would still differ (empty: the pull is exact).
    scrubber: the run's (the copy's values are told it, as the repo's were).

    Raises ConfigError when the edited repo would not validate.
    """
    import shutil
    import tempfile

    from .exporting import plan_folder

    with tempfile.TemporaryDirectory(prefix="cesync-pull-") as tmp:
        staged = Path(tmp) / "repo"
        shutil.copytree(root, staged, symlinks=True, ignore=shutil.ignore_patterns(".git", ".cesync", ".venv"))
        write_files(staged, files)
        plan = plan_folder(staged, env.name, remote, prune=False, variables=dict(env.overrides), scrubber=scrubber)
    return [
        f"{c.kind} {c.id}: {', '.join(f.path for f in c.fields) or c.action}"
        for c in plan.changes
        if c.action != "create" or any(r.kind == c.kind and r.id == c.id for r in remote)
        if wanted is None or c.key in wanted
    ]
