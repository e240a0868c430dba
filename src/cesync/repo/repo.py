"""The user's repo on disk: ``cesync.yaml`` and the resource files, rendered per environment.

Loading is two steps. :func:`load_repo` reads and parses every file once
(:mod:`cesync.repo.loading`). :meth:`Repo.render` then produces the desired resources for
one environment (:mod:`cesync.repo.environments` resolves it): ``${VAR}`` substitution,
``file:`` includes and ``{ref:}`` (:mod:`cesync.repo.templating`), key linting, the pydantic
model, semantic checks and ``$env_var`` substitution. Every problem is collected with
its ``file:line:col`` before anything is reported.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..api.kinds import KINDS, ResourceKind
from ..api.resource import ID_RE, Position, Resource
from ..core import parsecache
from ..core.checks import Finding, check_body, lint_keys, server_made, suggest
from ..core.fieldpath import data_path, position
from ..core.references import Ref, cycles, names_in
from ..core.yamlfile import Document, Path_
from ..errors import CesyncError, ConfigError, Problem
from . import parallel, rendercache, wholeload, wholerender
from .apidescription import settle
from .cache import cached_before, load_cache, save_cache
from .config import Config
from .environments import VAR_ENV_PREFIX, EnvTarget, env_var_name, resolve_env, skip_problems
from .loading import (
    CONFIG_FILE,
    SourceFile,
    clean_loc,
    cross_checks,
    declared_owners,
    error_owner,
    load_sources,
    parse_file,
    pydantic_problem,
    type_name,
    validate_model,
)
from .rendercache import Rendered
from .templating import (
    ENV_VAR,
    INCLUDABLE,
    VAR_NAME,
    VAR_RE,
    VAR_SPAN,
    Expander,
    env_var_urls,
    fill_app_fields,
    put_back,
    substitute,
)

# names kept importable from here (other modules and tests use these paths)
__all__ = [
    "CONFIG_FILE",
    "ENV_VAR",
    "ID_RE",
    "INCLUDABLE",
    "VAR_ENV_PREFIX",
    "VAR_NAME",
    "VAR_RE",
    "VAR_SPAN",
    "EnvTarget",
    "Repo",
    "SourceFile",
    "load_repo",
]

log = logging.getLogger(__name__)

SERVER_SET = {"name", "etag"}


def _server_set(key: str, kind: ResourceKind) -> str:
    if key == "etag":  # OUTPUT_ONLY in the protos for App and Deployment; Terraform marks every kind's `output: true`
        return "'etag' is output only (set by the server, sent back by cesync to guard its writes); remove it"
    return f"'{key}' is set by the server (output only: the resource's name); the {kind} id comes from the file name or 'id:'"


@dataclass
class Repo:
    root: Path
    config: Config
    config_doc: Document
    files: list[SourceFile] = field(default_factory=list)
    load_problems: list[Problem] = field(default_factory=list)  # files that did not parse
    unreadable: set[tuple[str, str]] = field(default_factory=set)  # (kind, id) of those files, by file name
    overrides: dict[str, str] = field(default_factory=dict)  # --var NAME=VALUE and --var-file values
    declared: dict[str, tuple[str, str]] | None = None  # declared_owners(), once asked (or as wholeload kept it)
    render_began: int = 0  # time.time_ns() as the last render of the files began (wholerender.store)

    @property
    def env_names(self) -> list[str]:
        return list(self.config.environments)

    def declared_owners(self) -> dict[str, tuple[str, str]]:
        """ "kind/id" -> (file, owner) of each {ref:, owner:} the files write (loading.declared_owners)."""
        if self.declared is None:
            self.declared = declared_owners(self.files)
        return self.declared

    def env(self, name: str | None) -> EnvTarget:
        """Resolve --env (or CESYNC_ENV); required when there is more than one environment."""
        return resolve_env(self.config, self.config_doc, name, self.overrides)

    def every_sensitive_name(self) -> frozenset[str]:
        """Each variable any environment marks sensitive."""
        d = self.config.defaults
        return frozenset({*d.sensitive, *(n for e in self.config.environments.values() for n in e.sensitive)})

    def every_sensitive_value(self) -> list[str]:
        """The value of each variable any environment marks sensitive, in every environment that gives one."""
        d = self.config.defaults
        names = self.every_sensitive_name()
        found: set[str] = set()
        for name in names:
            own = [os.environ.get(env_var_name(e, name)) for e in self.config.environments]
            found |= {v for v in own if v is not None}
            for source in (self.overrides, {name: os.environ.get(VAR_ENV_PREFIX + name)}, d.vars):
                value = source.get(name)
                if isinstance(value, str):
                    found.add(value)
            found |= {e.vars[name] for e in self.config.environments.values() if isinstance(e.vars.get(name), str)}
        return sorted(found)

    def render(self, env: EnvTarget, *, memo: _Memo | None = None, started: Callable[[], None] | None = None) -> list[Resource]:
        """The desired resources for one environment; ConfigError lists every problem.

        memo shares the work of files that render the same in several environments.
        started() is called as rendering starts (the app is read meanwhile).
        """
        if memo is None:  # a whole render
            later: list[Callable[[], None]] = []
            renders = self._render_files([env], started, later)[0]
            try:
                return self._collect(env, renders, keep=True)
            finally:
                self.keep_cache()
                parsecache.install(None)  # written: its bytes are freed before the plan holds the app as well
                for then in later:  # and before a second process's parsed documents come (repo/parallel.py)
                    then()
        return self._collect(env, [_render_file(self.root, src, env, self._known, memo) for src in self.files])

    def keep_cache(self) -> None:
        """Write what this run parsed and rendered for the next (repo/cache.py), once the command has
        asked for all it reads: the next run keeps only what this one used."""
        cache = parsecache.current()
        if cache is not None:
            cache.withhold(self.every_sensitive_value())
        save_cache(self.root, cache)

    def ignore_rules(self, env: EnvTarget) -> dict[tuple[str, str], tuple[str, ...]]:
        """Per resource, the field paths left to the console (core.ignore): its kind's in defaults and
        the environment's ignoreChanges, and its file's own."""
        d = self.config.defaults.ignoreChanges
        e = self.config.environments[env.name].ignoreChanges if env.name in self.config.environments else {}
        rules: dict[tuple[str, str], tuple[str, ...]] = {}
        from .releases import released_fields

        for f in self.files:
            owned_by_release = released_fields(self.root, f.kind, f.id)
            paths = tuple(dict.fromkeys([*d.get(f.kind.name, []), *e.get(f.kind.name, []), *f.ignore, *owned_by_release]))
            if paths:
                rules[f.key] = paths
        return rules

    def ignore_problems(self) -> list[Problem]:
        """ignoreChanges that names a kind cesync does not manage or a field its kind does not have."""
        from .ignoring import field_problem

        found: list[Problem] = []
        doc = self.config_doc
        places = [(("defaults", "ignoreChanges"), self.config.defaults.ignoreChanges)] + [
            (("environments", n, "ignoreChanges"), e.ignoreChanges) for n, e in self.config.environments.items()
        ]
        for at, table in places:
            for kind_name, paths in table.items():
                kind = KINDS.get(kind_name)
                if kind is None:
                    hint = suggest(kind_name, sorted(KINDS))
                    found.append(doc.problem((*at, kind_name), f"ignoreChanges: {kind_name!r} is no kind{hint}", key=True))
                    continue
                found += [doc.problem((*at, kind_name, i), m) for i, p in enumerate(paths) if (m := field_problem(kind, p))]
        for f in self.files:
            found += [f.doc.problem(("ignoreChanges", i), m) for i, p in enumerate(f.ignore) if (m := field_problem(f.kind, p))]
        return found

    def sensitive_names(self, env: EnvTarget) -> set[str]:
        """The variables cesync.yaml marks sensitive for this environment (defaults included)."""
        return {*self.config.defaults.sensitive, *self.config.environments[env.name].sensitive}

    def sensitive_values(self, env: EnvTarget) -> dict[str, str]:
        """The environment's sensitive variables that have a value, resolved as ${NAME} is (--var first)."""
        found = {n: env.var(n) for n in sorted(self.sensitive_names(env))}
        return {n: v for n, v in found.items() if v is not None}

    @property
    def _known(self) -> set[tuple[str, str]]:
        """What a reference may name: the files read, and those whose own problem is reported already."""
        return {f.key for f in self.files} | self.unreadable

    def _render_files(
        self, envs: list[EnvTarget], started: Callable[[], None] | None = None, later: list[Callable[[], None]] | None = None
    ) -> list[list[_FileRender]]:
        """Each file rendered for each environment (by environment, then in file order); later: see parallel.run."""
        known = self._known
        self.render_began = time.time_ns()
        cache = parsecache.current()
        if cache is not None:  # before the first parse of a text a ${NAME} was substituted into
            cache.withhold(self.every_sensitive_value())
        scopes = {
            e.name: rendercache.scope(known, self.sensitive_values(e).values(), self.every_sensitive_name())
            if cache is not None
            else None
            for e in envs
        }

        def render(files: list[SourceFile]) -> list[list[_FileRender]]:
            memo: _Memo = {}
            memo_or_none = memo if len(envs) > 1 else None
            return [[_render_file(self.root, src, env, known, memo_or_none, scopes[env.name]) for env in envs] for src in files]

        whole = scopes[envs[0].name] if len(envs) == 1 else None
        found = None
        # kept whole for an unchanged repo; not with a file that did not load (x.yml beside x.yaml: no input of the key)
        if cache is not None and whole is not None and not self.load_problems:
            found = wholerender.find(cache, self.root, self.files, self.config_doc.digest, envs[0], whole)
        if found is not None:
            if started is not None:
                started()
            return [found]
        per_file = parallel.run(self.files, render, started, later=later)  # a large repo: every other file in a second process
        return [[renders[i] for renders in per_file] for i in range(len(envs))]

    def _collect(self, env: EnvTarget, renders: list[_FileRender], *, keep: bool = False) -> list[Resource]:
        """The resources of renders, or ConfigError; keep: the whole render is kept when it has no problem."""
        if isinstance(renders, wholerender.Kept):  # kept only after it was collected without a problem
            return renders.resources(self.files, env)
        problems: list[Problem] = list(self.load_problems)
        out: list[Resource] = []
        edges: list[Ref] = []
        problems += skip_problems(self.config, self.config_doc, env, self._known)
        for src, (body, found, refs) in zip(self.files, renders, strict=True):
            if src.key in env.skip:
                log.debug("render: %s %s: left out of %s (environments.%s.skip)", src.kind, src.id, env.name, env.name)
                continue  # this environment does not have it (environments.<name>.skip)
            problems += found
            for at, target in names_in(body, env.parent) if env.skip and body is not None else ():
                if target in env.skip:
                    said = f"{KINDS[target[0]].collection}/{target[1]}"
                    message = f"{said} is in environments.{env.name}.skip, so nothing this environment has may name it"
                    problems.append(src.doc.problem(at, message))
            edges += [Ref(src.key, target, partial(src.doc.problem, at, "")) for at, target in refs]
            if body is not None:
                out.append(Resource(src.kind, src.id, body, source=Position(src.doc.file)))
        problems += cross_checks(out, self.files)
        problems += cycles(edges)
        if problems:
            raise ConfigError(problems)
        if keep and (cache := parsecache.current()) is not None:
            within = rendercache.scope(self._known, self.sensitive_values(env).values(), self.every_sensitive_name())
            wholerender.store(cache, self.root, self.files, self.config_doc.digest, env, within, renders, self.render_began)
        return sorted(out, key=lambda d: d.key)

    def locate(self, kind: ResourceKind, rid: str, field: str) -> str:
        """``file:line:col`` of a field an API error names (a BadRequest field path), or "" when the
        resource is not one of the repo's files."""
        src = next((f for f in self.files if f.kind is kind and f.id == rid), None)
        if src is None:
            return ""
        line, col = position(src.doc.positions, data_path(field, kind.name))
        return f"{src.doc.file}:{line}:{col}"

    def validate(self, env_names: list[str] | None = None, rendered: dict[str, list[Resource]] | None = None) -> list[Problem]:
        """Every problem of the repo, for each named environment (default: all); rendered gets the
        resources of each environment that renders without one."""
        problems: set[Problem] = set(self.ignore_problems())
        envs: list[EnvTarget] = []
        for name in env_names or self.env_names:
            try:
                envs.append(self.env(name))
            except ConfigError as exc:
                problems.update(exc.problems)
        for env, renders in zip(envs, self._render_files(envs) if envs else [], strict=True):
            try:
                (rendered if rendered is not None else {})[env.name] = self._collect(env, renders, keep=len(envs) == 1)
            except ConfigError as exc:
                problems.update(exc.problems)
        return sorted(problems)


def find_root(start: Path) -> Path:
    """The folder of the cesync.yaml that start is in: start or its nearest parent with one, as git
    finds .git. The search stops at the top of a git work tree (a folder with .git), so a stray
    cesync.yaml above the repo is never taken."""
    for folder in (start, *start.parents):
        if (folder / CONFIG_FILE).is_file():
            return folder
        if (folder / ".git").exists():
            break
    # no file to point at (a position in a file that does not exist would send an editor nowhere)
    raise CesyncError(
        f"no {CONFIG_FILE} in {start} or any folder above it; run 'cesync init' or pass --dir "
        "(cesync matrix lists the apps below a folder)"
    )


def load_repo(root: Path, *, resources: bool = True, configured: Callable[[Repo], None] | None = None) -> Repo:
    """Read cesync.yaml and every tool and toolset file; ConfigError on any problem.

    resources=False reads cesync.yaml only (for commands that need the environments,
    not the definitions: export, diff, exec, test). configured(repo) is called with cesync.yaml
    read and valid, before a file is, when a run before left its parse cache (the files most
    likely load from it): the app may be read meanwhile. Its repo has the environments, no files.
    """
    root = find_root(root.resolve())
    cfg_path = root / CONFIG_FILE
    problems: list[Problem] = []
    cfg_doc = parse_file(cfg_path, root, problems)
    config = None
    if cfg_doc is not None and not isinstance(cfg_doc.data, dict):
        # pydantic's "valid dictionary or instance of Config" names a class, not the file's shape.
        problems.append(
            cfg_doc.problem(
                (),
                f"{CONFIG_FILE} must be a mapping with 'version: 1' and 'environments:', not {type_name(cfg_doc.data)} "
                "(cesync init writes one)",
            )
        )
    elif cfg_doc is not None:
        config, found = validate_model(Config, cfg_doc.data, cfg_doc)
        problems += found
    early = configured is not None and resources and not problems and cached_before(root)
    if early and configured is not None and config is not None and cfg_doc is not None:
        configured(Repo(root, config, cfg_doc))
    unreadable: set[tuple[str, str]] = set()
    if resources:  # what parsing the files gave, kept from the last run (cache.py)
        parsecache.install(load_cache(root))
    cache = parsecache.current() if resources else None
    begun = time.time_ns()
    kept = wholeload.find(cache, root) if cache is not None else None
    files, declared = kept if kept is not None else (load_sources(root, problems, unreadable) if resources else [], None)
    if config is None or cfg_doc is None:
        raise ConfigError(problems)
    if cache is not None and kept is None and not problems:
        declared = declared_owners(files)
        wholeload.store(cache, root, files, declared, begun)
    repo = Repo(root, config, cfg_doc, files, problems, unreadable=unreadable, declared=declared)
    settle(root, config, cfg_doc, files, problems)  # before rendering, which reads the description
    return repo


# --- rendering one file for one environment ----------------------------------------------


# One file's render, kept for the next environment of the same validate: the substituted
# data as JSON, the app's name if the render used it (else None), the app it rendered for, and
# the render (rendercache.Rendered).
_Memo = dict[tuple[str, str], tuple[str, str | None, str, Rendered]]


_FileRender = wholerender.FileRender


def _render_file(
    root: Path,
    src: SourceFile,
    env: EnvTarget,
    known: set[tuple[str, str]],
    memo: _Memo | None = None,
    scope: rendercache.Scope | None = None,
) -> _FileRender:
    """${VAR} substitution is per environment; what follows runs again only if it changed the data.

    scope: what the render is cached under (rendercache.scope), when it may be taken from the cache."""
    doc = src.doc
    data, missing = substitute(doc.data, env, (), src.kind.model)
    key = json.dumps(data, default=str) if memo is not None else ""
    hit = memo.get(src.key) if memo is not None else None
    if hit is not None and hit[0] == key and hit[1] in (None, env.parent) and (hit[2] == env.parent or hit[3][5] is not None):
        rendered = hit[3]
        if hit[2] != env.parent:  # the same render for another app: its names are looked for again
            rendered = (*rendered[:3], list(names_in(rendered[5], env.parent)), *rendered[4:])
            _keep(root, src, data, env.parent, scope, rendered)
    else:
        used_parent, rendered = _cached(root, src, data, env.parent, known, scope)
        if memo is not None:
            memo[src.key] = (key, env.parent if used_parent else None, env.parent, rendered)
    body, problems, checked, named, ref_paths, _ = rendered
    deferrable = src.kind.deferrable
    refs: list[tuple[Path_, tuple[str, str]]] = []
    for path, target in named:
        # A reference in a field the create may leave for a later patch closes no impossible cycle (order.py).
        if target in known and not (path and path[0] in deferrable):  # positioned at the {ref:} when it came from one
            refs.append(((*path, "ref") if path in ref_paths else path, target))
    said = [doc.problem(p, m) for p, m in missing]
    at = {(x.file, x.line, x.col) for x in said}  # a variable's problem explains the model's at the same value
    problems = said + [x for x in problems if (x.file, x.line, x.col) not in at]
    if body is None or problems:
        return None, problems, refs
    body = dict(body)  # _env_var replaces the type's dict, never the shared one
    return body, checked + env_var_urls(src, body, env), refs


def _cached(
    root: Path, src: SourceFile, data: Any, parent: str, known: set[tuple[str, str]], scope: rendercache.Scope | None
) -> tuple[bool, Rendered]:
    """_checked, or what it gave for the same inputs on an earlier run (repo/rendercache.py)."""
    cache = parsecache.current() if scope is not None else None
    key = rendercache.render_key(cache, src, data, parent, scope) if cache is not None and scope is not None else None
    if cache is None or key is None:
        return _checked(root, src, data, parent, known)
    found = rendercache.find(cache, key, root, src, parent, known)
    if found is not None:
        return found
    used_parent, rendered = _checked(root, src, data, parent, known)
    rendercache.store(cache, key, root, src, data, parent, used_parent, rendered)
    return used_parent, rendered


def _keep(root: Path, src: SourceFile, data: Any, parent: str, scope: rendercache.Scope | None, rendered: Rendered) -> None:
    """Cache a render made for another environment's app that holds for this one's as well."""
    cache = parsecache.current() if scope is not None else None
    key = rendercache.render_key(cache, src, data, parent, scope) if cache is not None and scope is not None else None
    if cache is not None and key is not None:
        rendercache.store(cache, key, root, src, data, parent, False, rendered)


def _checked(root: Path, src: SourceFile, data: Any, parent: str, known: set[tuple[str, str]]) -> tuple[bool, Rendered]:
    """Includes, refs, key linting, the model and the checks: (whether refs used parent, result)."""
    doc = src.doc
    model = src.kind.model
    expander = Expander(root, src.path.parent, doc, parent, known, references=src.kind.references, message=src.kind.model_name)
    data = expander.expand(data)
    expanded = dict(data) if isinstance(data, dict) else data  # as it was before the pops below
    named = list(names_in(expanded, parent))
    problems = list(expander.problems)
    for key in sorted(SERVER_SET & set(data)):
        problems.append(doc.problem((key,), _server_set(key, src.kind), key=True))
        data.pop(key)
    includes = expander.includes
    problems += [_finding(f, doc, includes) for f in server_made(src.kind, src.id, doc.data)]
    newer: list[tuple[Path_, Any]] = []  # fields and values of a newer description than the models': put back below
    data, findings = lint_keys(data, model, set_aside=newer)
    problems += [_finding(f, doc, includes) for f in findings]
    filled = fill_app_fields(data, src.kind.app_fields, parent)
    used_parent = expander.used_parent or filled
    try:
        obj = model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        # A misspelt key already explains a missing field (or tool type) of the same mapping: one problem, not two.
        misspelt = {f.path[:-1] for f in findings if f.key}
        errors = [e for e in errors if not (e["type"] in ("missing", "oneof_missing") and error_owner(e) in misspelt)]
        # A {ref:} that named nothing was reported where it stands: not again as an empty value.
        errors = [e for e in errors if clean_loc(e) not in expander.failed_refs]
        return used_parent, (None, problems + [pydantic_problem(e, doc) for e in errors], [], named, expander.ref_paths, expanded)
    if problems:
        return used_parent, (None, problems, [], named, expander.ref_paths, expanded)
    body = obj.model_dump(mode="json", exclude_none=True, by_alias=True)  # "schema", not pydantic's "schema_"
    for at, value in newer:
        put_back(body, at, value)
    checked = [_finding(f, doc, includes) for f in check_body(src.kind, body)]
    return used_parent, (body, [], checked, named, expander.ref_paths, expanded)


def _finding(f: Finding, doc: Document, includes: dict[Path_, tuple[str, int]]) -> Problem:
    if f.path in includes and f.line_in_value is not None:
        file, _ = includes[f.path]
        return Problem(file, f.line_in_value, f.col_in_value or 1, f.message)
    if f.path in includes:
        return Problem(includes[f.path][0], 1, 1, f.message)
    line, col = doc.positions.at(f.path, key=f.key)
    if f.line_in_value is not None and not f.key:
        line += f.line_in_value  # block scalar text starts on the line after the key
        col = f.col_in_value or 1
    return Problem(doc.file, line, col, f.message)
