"""The user's repo on disk: ``cesync.yaml``, tool and toolset files, includes, variables.

Loading is two steps. :func:`load_repo` reads and parses every file once.
:meth:`Repo.render` then produces the desired resources for one environment:
``${VAR}`` substitution, ``file:`` includes, key linting, the pydantic model,
semantic checks and ``$env_var`` substitution. Every problem is collected with its
``file:line:col`` before anything is reported.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from io import StringIO
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML

from .checks import Finding, check_body, lint_keys, suggest
from .config import Config, Environment, check_segment
from .documents import substitute_url
from .errors import CesyncError, ConfigError, Problem
from .kinds import KINDS, by_collection, ref_collections, spoken
from .models import TOOL_TYPES
from .references import Ref, cycles, names_in
from .resource import Position, Resource
from .yamlfile import Document, Path_, load_text, read_text

__all__ = ["CONFIG_FILE", "EnvTarget", "Repo", "load_repo"]

CONFIG_FILE = "cesync.yaml"
ID_RE = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_-]{0,127}\Z")  # \Z: "$" would let a trailing newline in
VAR_SPAN = r"\{([^}]*)\}?"  # what follows "$" (or the escape "$$") in a ${NAME} reference
VAR_RE = re.compile(r"\$(\$?)" + VAR_SPAN)
VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
# The process environment gives ${NAME} only as CESYNC_VAR_NAME (as Terraform's TF_VAR_):
# a pull request's author writes every repo file, so reading plain NAME would let one print
# GITHUB_TOKEN or any other secret of the CI job in a plan.
VAR_ENV_PREFIX = "CESYNC_VAR_"
INCLUDABLE = {"openApiSchema", "pythonCode", "pythonScript"}
ENV_VAR = "$env_var"
SERVER_SET = {"name", "etag"}


@dataclass(frozen=True)
class EnvTarget:
    """One environment of cesync.yaml with defaults applied."""

    name: str
    project: str
    location: str
    app: str
    endpoint: str | None
    vars: Mapping[str, str]
    urls: Mapping[str, str]
    prune: bool
    impersonate_service_account: str | None = None
    quota_project: str | None = None
    overrides: Mapping[str, str] = field(default_factory=dict)  # --var / --var-file: win over everything

    def __post_init__(self) -> None:
        # Every URL is built from these: refuse anything that could change it (--app included).
        for what in ("project", "location", "app"):
            try:
                check_segment(getattr(self, what), what)
            except ValueError as exc:
                raise CesyncError(f"environment '{self.name}': {exc}") from None

    @property
    def parent(self) -> str:
        return f"projects/{self.project}/locations/{self.location}/apps/{self.app}"

    def var(self, name: str) -> str | None:
        """${NAME}'s value: --var/--var-file, the process's CESYNC_VAR_NAME, the environment's vars, defaults.vars."""
        if name in self.overrides:
            return self.overrides[name]
        value = os.environ.get(VAR_ENV_PREFIX + name)
        return self.vars.get(name) if value is None else value


@dataclass
class SourceFile:
    kind: str
    id: str
    path: Path
    doc: Document


@dataclass
class Repo:
    root: Path
    config: Config
    config_doc: Document
    files: list[SourceFile] = field(default_factory=list)
    load_problems: list[Problem] = field(default_factory=list)  # files that did not parse
    overrides: dict[str, str] = field(default_factory=dict)  # --var NAME=VALUE and --var-file values

    @property
    def env_names(self) -> list[str]:
        return list(self.config.environments)

    def env(self, name: str | None) -> EnvTarget:
        """Resolve --env (or CESYNC_ENV); required when there is more than one environment."""
        name = name or os.environ.get("CESYNC_ENV") or None
        names = self.env_names
        if name is None:
            if len(names) != 1:
                raise ConfigError([self._problem(("environments",), f"choose an environment with --env: {', '.join(names)}")])
            name = names[0]
        if name not in self.config.environments:
            hint = suggest(name, names)
            raise ConfigError(
                [self._problem(("environments",), f"unknown environment '{name}'{hint} (known: {', '.join(names)})")]
            )
        return self._target(name, self.config.environments[name])

    def _target(self, name: str, env: Environment) -> EnvTarget:
        d = self.config.defaults
        project, location = env.project or d.project, env.location or d.location
        missing = [k for k, v in (("project", project), ("location", location)) if not v]
        if missing:
            raise ConfigError(
                [
                    self._problem(
                        ("environments", name), f"environment '{name}' needs {' and '.join(missing)} (or set them in defaults)"
                    )
                ]
            )
        assert project and location
        return EnvTarget(
            name=name,
            project=project,
            location=location,
            app=env.app,
            endpoint=env.endpoint or d.endpoint,
            vars={**d.vars, **env.vars, **self.overrides},
            urls=dict(env.urls),
            prune=self.config.prune if env.prune is None else env.prune,
            impersonate_service_account=env.impersonateServiceAccount,
            quota_project=env.quotaProject,
            overrides=dict(self.overrides),
        )

    def _problem(self, path: Path_, message: str) -> Problem:
        return self.config_doc.problem(path, message, key=True)

    def render(self, env: EnvTarget, *, memo: _Memo | None = None) -> list[Resource]:
        """The desired resources for one environment; ConfigError lists every problem.

        memo shares the work of files that render the same in several environments.
        """
        problems: list[Problem] = list(self.load_problems)
        out: list[Resource] = []
        known = {(f.kind, f.id) for f in self.files}
        edges: list[Ref] = []
        for src in self.files:
            body, found = _render_file(self.root, src, env, known, edges, memo)
            problems += found
            if body is not None:
                out.append(Resource(src.kind, src.id, body, source=Position(src.doc.file)))
        problems += _cross_checks(out, self.files)
        problems += cycles(edges)
        if problems:
            raise ConfigError(problems)
        return sorted(out, key=lambda d: (d.kind, d.id))

    def validate(self, env_names: list[str] | None = None) -> list[Problem]:
        """Every problem of the repo, for each named environment (default: all)."""
        problems: set[Problem] = set()
        memo: _Memo = {}
        for name in env_names or self.env_names:
            try:
                self.render(self.env(name), memo=memo)
            except ConfigError as exc:
                problems.update(exc.problems)
        return sorted(problems)


def load_repo(root: Path, *, resources: bool = True) -> Repo:
    """Read cesync.yaml and every tool and toolset file; ConfigError on any problem.

    resources=False reads cesync.yaml only (for commands that need the environments,
    not the definitions: export, diff, exec, test).
    """
    root = root.resolve()
    cfg_path = root / CONFIG_FILE
    if not cfg_path.is_file():
        raise ConfigError([Problem(str(cfg_path), 1, 1, f"no {CONFIG_FILE} here; run 'cesync init' or pass --dir")])
    problems: list[Problem] = []
    cfg_doc = _parse(cfg_path, root, problems)
    config = None
    if cfg_doc is not None:
        config, found = _model(Config, cfg_doc.data, cfg_doc)
        problems += found
    files: list[SourceFile] = []
    seen: dict[tuple[str, str], str] = {}
    for kind, folder in ((k.name, k.folder) for k in KINDS.values()) if resources else ():
        for path in sorted((root / folder).glob("*.y*ml")) if (root / folder).is_dir() else []:
            if path.suffix not in (".yaml", ".yml") or path.name.startswith("."):
                continue
            doc = _parse(path, root, problems)
            if doc is None:
                continue
            if not isinstance(doc.data, dict):
                problems.append(doc.problem((), f"a {kind} file must be a mapping of fields, not {_type_name(doc.data)}"))
                continue
            rid = doc.data.pop("id", path.stem)
            if not isinstance(rid, str) or not ID_RE.match(rid):
                problems.append(
                    doc.problem(("id",), f"invalid {kind} id {rid!r}: use letters, digits, '-' and '_' (at most 128)")
                )
                continue
            if (kind, rid) in seen:
                problems.append(doc.problem(("id",), f"duplicate {kind} id '{rid}' (also defined in {seen[(kind, rid)]})"))
                continue
            seen[(kind, rid)] = doc.file
            files.append(SourceFile(kind, rid, path, doc))
    if config is None or cfg_doc is None:
        raise ConfigError(problems)
    return Repo(root, config, cfg_doc, files, problems)


def _parse(path: Path, root: Path, problems: list[Problem]) -> Document | None:
    display = _display(path, root)
    text = read_text(path, display, root=root)
    if isinstance(text, Problem):
        problems.append(text)
        return None
    doc = load_text(text, display)
    if isinstance(doc, Problem):
        problems.append(doc)
        return None
    return doc


def _display(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _type_name(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", type(None): "empty"}.get(type(value), type(value).__name__)


def _model(model: type[BaseModel], data: Any, doc: Document) -> tuple[Any, list[Problem]]:
    try:
        return model.model_validate(data), []
    except ValidationError as exc:
        return None, [_pydantic_problem(err, doc) for err in exc.errors()]


def _pydantic_problem(err: Any, doc: Document, offset: Path_ = ()) -> Problem:
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
        return doc.problem(path, f"unknown field '{loc[-1]}'", key=True)
    msg = err["msg"]
    if err["type"] == "required_empty":  # the API reads "", 0 or the enum's 0 of a required field as unset
        return doc.problem(path, f"{dotted or loc[-1]} is required and must not be {err['ctx']['empty']}")
    if err["type"] == "literal_error":
        return doc.problem(path, f"{dotted}: {_enum_message(err)}" if dotted else _enum_message(err))
    if err["type"] in ("string_type", "int_type", "bool_type", "float_type", "dict_type", "list_type", "model_type"):
        msg = f"{msg} (got {_type_name(err.get('input'))})"
    return doc.problem(path, f"{dotted}: {msg}" if dotted else msg)


def _clean_loc(err: Any) -> Path_:
    return tuple(p for p in err["loc"] if not (isinstance(p, str) and (p.startswith("function-") or p in ("str", "int"))))


def _owner(err: Any) -> Path_:
    """The mapping a missing-field error is about."""
    loc = _clean_loc(err)
    return loc if err["type"] == "oneof_missing" else loc[:-1]


def _enum_message(err: Any) -> str:
    """What was given, what is allowed, and the closest allowed value."""
    allowed = re.findall(r"'([^']*)'", str(err.get("ctx", {}).get("expected", "")))
    given = err.get("input")
    close = difflib.get_close_matches(str(given).upper(), allowed, n=1, cutoff=0.4) if isinstance(given, str) else []
    hint = f"; did you mean '{close[0]}'?" if close else ""
    shown = ", ".join(allowed) if len(allowed) <= 12 else ", ".join(allowed[:12]) + ", ..."
    return f"{given!r} is not a valid value{hint} (one of: {shown})"


# --- rendering one file for one environment ----------------------------------------------


# One file's render, kept for the next environment of the same validate: the substituted
# data as JSON, the app parent if refs used it, and the result (see _Rendered).
_Rendered = tuple[dict[str, Any] | None, list[Problem], list[Problem], Any, set[Path_]]
_Memo = dict[tuple[str, str], tuple[str, str | None, _Rendered]]


def _render_file(
    root: Path, src: SourceFile, env: EnvTarget, known: set[tuple[str, str]], edges: list[Ref], memo: _Memo | None = None
) -> tuple[dict[str, Any] | None, list[Problem]]:
    """${VAR} substitution is per environment; what follows runs again only if it changed the data."""
    doc = src.doc
    data, missing = _substitute(doc.data, env, ())
    key = json.dumps(data, default=str) if memo is not None else ""
    hit = memo.get((src.kind, src.id)) if memo is not None else None
    if hit is not None and hit[0] == key and hit[1] in (None, env.parent):
        rendered = hit[2]
    else:
        used_parent, rendered = _checked(root, src, data, env.parent, known)
        if memo is not None:
            memo[(src.kind, src.id)] = (key, env.parent if used_parent else None, rendered)
    body, problems, checked, expanded, ref_paths = rendered
    for path, target in names_in(expanded, env.parent):
        if target in known:  # positioned at the {ref:} itself when the name came from one
            at = partial(doc.problem, (*path, "ref") if path in ref_paths else path, "")
            edges.append(Ref((src.kind, src.id), target, at))
    problems = [doc.problem(p, m) for p, m in missing] + problems
    if body is None or problems:
        return None, problems
    body = dict(body)  # _env_var replaces the type's dict, never the shared one
    return body, checked + _env_var(src, body, env)


def _checked(root: Path, src: SourceFile, data: Any, parent: str, known: set[tuple[str, str]]) -> tuple[bool, _Rendered]:
    """Includes, refs, key linting, the model and the checks: (whether refs used parent, result)."""
    doc = src.doc
    model = KINDS[src.kind].model
    expander = _Expander(root, src.path.parent, doc, parent, known)
    data = expander.expand(data)
    expanded = dict(data) if isinstance(data, dict) else data  # as it was before the pops below
    problems = list(expander.problems)
    for key in SERVER_SET & set(data):
        problems.append(
            doc.problem((key,), f"'{key}' is set by the server; the {src.kind} id comes from the file name or 'id:'", key=True)
        )
        data.pop(key)
    includes = expander.includes
    data, findings = lint_keys(data, model)
    problems += [_finding(f, doc, includes) for f in findings]
    done = (expander.used_parent, expanded, expander.ref_paths)
    try:
        obj = model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        # A misspelt key already explains a missing field (or tool type) of the same mapping: one problem, not two.
        misspelt = {f.path[:-1] for f in findings if f.key}
        errors = [e for e in errors if not (e["type"] in ("missing", "oneof_missing") and _owner(e) in misspelt)]
        return done[0], (None, problems + [_pydantic_problem(e, doc) for e in errors], [], done[1], done[2])
    if problems:
        return done[0], (None, problems, [], done[1], done[2])
    body = obj.model_dump(mode="json", exclude_none=True)
    return done[0], (body, [], [_finding(f, doc, includes) for f in check_body(src.kind, body)], done[1], done[2])


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


def _substitute(data: Any, env: EnvTarget, path: Path_) -> tuple[Any, list[tuple[Path_, str]]]:
    """Replace ${NAME} in every string (values: :meth:`EnvTarget.var`)."""
    if isinstance(data, dict):
        out, missing = {}, []
        for k, v in data.items():
            out[k], m = _substitute(v, env, (*path, k))
            missing += m
        return out, missing
    if isinstance(data, list):
        items, missing = [], []
        for i, v in enumerate(data):
            value, m = _substitute(v, env, (*path, i))
            items.append(value)
            missing += m
        return items, missing
    if not isinstance(data, str) or "${" not in data:
        return data, []
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
            problems.append(
                (
                    path,
                    f"variable '{name}' is not set for environment '{env.name}' (set it in environments.{env.name}.vars, "
                    f"defaults.vars, --var or the process environment as {VAR_ENV_PREFIX}{name}; a plain {name} is never read)",
                )
            )
            return match.group(0)
        return value

    return VAR_RE.sub(replace, data), problems


@dataclass
class _Expander:
    """Resolves {file: path} includes, mapping-form schemas and {ref: kind/id} references."""

    root: Path
    base: Path
    doc: Document
    parent: str
    known: set[tuple[str, str]]
    problems: list[Problem] = field(default_factory=list)
    includes: dict[Path_, tuple[str, int]] = field(default_factory=dict)
    ref_paths: set[Path_] = field(default_factory=set)  # where a {ref:} was replaced by a name
    used_parent: bool = False  # a ref named the app: the result differs per environment

    def expand(self, data: Any, path: Path_ = ()) -> Any:
        if isinstance(data, list):
            return [
                self.ref(v["ref"], (*path, i, "ref")) if _is_ref(v) else self.expand(v, (*path, i)) for i, v in enumerate(data)
            ]
        if not isinstance(data, dict):
            return data
        out: dict[str, Any] = {}
        for key, value in data.items():
            here = (*path, key)
            if _is_ref(value):
                out[key] = self.ref(value["ref"], (*here, "ref"))
            elif key in INCLUDABLE and isinstance(value, dict):
                out[key] = self.include(key, value, here)
            else:
                out[key] = self.expand(value, here)
        return out

    def ref(self, target: Any, at: Path_) -> str | None:
        parts = target.split("/") if isinstance(target, str) else []
        if len(parts) != 2 or parts[0] not in ref_collections() or not ID_RE.match(parts[1]):
            shapes = spoken((f"{c}/<id>" for c in ref_collections()), "or")
            self.problems.append(self.doc.problem(at, f"ref must be {shapes}; got {target!r}"))
            return None
        found = by_collection(parts[0])  # None: a collection refs may name but cesync does not manage
        kind = found.name if found else None
        self.ref_paths.add(at[:-1])
        if kind is not None and (kind, parts[1]) not in self.known:
            ids = sorted(i for k, i in self.known if k == kind)
            self.problems.append(self.doc.problem(at, f"ref {target!r} names no {kind} of this repo{suggest(parts[1], ids)}"))
            return None
        self.used_parent = True
        return f"{self.parent}/{target}"

    def include(self, key: str, value: dict[str, Any], here: Path_) -> str | None:
        if set(value) != {"file"}:
            if key == "openApiSchema":
                return _dump_yaml(value)
            self.problems.append(self.doc.problem(here, f"{key} must be text or {{file: path}}"))
            return None
        rel, at = value["file"], (*here, "file")
        if not isinstance(rel, str) or not rel:
            self.problems.append(self.doc.problem(at, "file: must be a relative path"))
            return None
        target = (self.base / rel).resolve()
        if Path(rel).is_absolute() or not target.is_relative_to(self.root):
            self.problems.append(self.doc.problem(at, f"file '{rel}' is outside the repo; includes must stay inside it"))
            return None
        if not target.is_file():
            where = _display(self.base, self.root)
            self.problems.append(self.doc.problem(at, f"file '{rel}' does not exist (relative to {where})"))
            return None
        text = read_text(target, _display(target, self.root))
        if isinstance(text, Problem):
            self.problems.append(text)
            return None
        self.includes[here] = (_display(target, self.root), 0)
        return text


def _is_ref(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"ref"}


def _dump_yaml(value: Any) -> str:
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]  # keep the author's key order
    buf = StringIO()
    yaml.dump(value, buf)
    return buf.getvalue()


def _env_var(src: SourceFile, body: dict[str, Any], env: EnvTarget) -> list[Problem]:
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


def _cross_checks(resources: list[Resource], files: list[SourceFile]) -> list[Problem]:
    """Tool names (the type's `name`) must be unique in an app."""
    docs = {(f.kind, f.id): f.doc for f in files}
    problems: list[Problem] = []
    names: dict[str, str] = {}
    for r in resources:
        if r.kind != "tool":
            continue
        type_field = next(iter(k for k in r.body if isinstance(r.body[k], dict) and k in TOOL_TYPES), None)
        if type_field is None:
            continue
        name = r.body[type_field].get("name")
        doc = docs[(r.kind, r.id)]
        if name:
            if name in names:
                problems.append(
                    doc.problem((type_field, "name"), f"duplicate tool name '{name}' (also used by tool '{names[name]}')")
                )
            else:
                names[name] = r.id
    return problems
