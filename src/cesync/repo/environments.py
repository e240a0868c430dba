"""Environments: ``cesync.yaml``'s environments resolved with their defaults, and ``${NAME}`` values."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from ..api.kinds import KINDS, by_collection
from ..core.checks import suggest
from ..core.yamlfile import Document, Path_
from ..errors import CesyncError, ConfigError, Problem
from .config import EMBEDDED, Config, Environment, QuotaSettings, check_segment

__all__ = ["VAR_ENV_PREFIX", "EnvTarget", "env_var_name", "resolve_env", "shared_apps", "skip_problems"]

# The process environment gives ${NAME} only as CESYNC_VAR_NAME (as Terraform's TF_VAR_):
# a pull request's author writes every repo file, so reading plain NAME would let one print
# GITHUB_TOKEN or any other secret of the CI job in a plan.
VAR_ENV_PREFIX = "CESYNC_VAR_"


def env_var_name(env: str, name: str) -> str:
    """The process variable that gives ${NAME} to one environment only (CESYNC_PROD_VAR_NAME): a run
    that reads two environments (diff, promote, matrix) needs each one's own secret, and a CI job
    holds both as two variables. Characters a shell variable cannot hold become '_'."""
    return f"CESYNC_{re.sub(r'[^A-Za-z0-9]', '_', env).upper()}_VAR_{name}"


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
    quota: QuotaSettings | None = None  # None: the endpoint's default (connect)
    overrides: Mapping[str, str] = field(default_factory=dict)  # --var / --var-file: win over everything
    skip: frozenset[tuple[str, str]] = frozenset()  # (kind, id) of the repo's resources this environment leaves out
    sensitive: frozenset[str] = frozenset()  # the variables cesync.yaml marks sensitive here (defaults' included)

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
        """${NAME}'s value: --var/--var-file, the process's CESYNC_<ENV>_VAR_NAME (this environment's
        own), then CESYNC_VAR_NAME, the environment's vars, defaults.vars."""
        if name in self.overrides:
            return self.overrides[name]
        value = os.environ.get(env_var_name(self.name, name))
        if value is None:
            value = os.environ.get(VAR_ENV_PREFIX + name)
        return self.vars.get(name) if value is None else value


def resolve_env(config: Config, config_doc: Document, name: str | None, overrides: Mapping[str, str]) -> EnvTarget:
    """Resolve --env (or CESYNC_ENV); required when there is more than one environment."""
    name = name or os.environ.get("CESYNC_ENV") or None
    names = list(config.environments)
    if name is None:
        if len(names) != 1:
            raise ConfigError(
                [_problem(config_doc, ("environments",), f"choose an environment with --env (or CESYNC_ENV): {', '.join(names)}")]
            )
        name = names[0]
    if name not in config.environments:
        hint = suggest(name, names)
        raise ConfigError(
            [_problem(config_doc, ("environments",), f"unknown environment '{name}'{hint} (known: {', '.join(names)})")]
        )
    return _target(config, config_doc, name, config.environments[name], overrides)


def _target(config: Config, config_doc: Document, name: str, env: Environment, overrides: Mapping[str, str]) -> EnvTarget:
    d = config.defaults
    project, location = env.project or d.project, env.location or d.location
    missing = [k for k, v in (("project", project), ("location", location)) if not v]
    if missing:
        raise ConfigError(
            [
                _problem(
                    config_doc,
                    ("environments", name),
                    f"environment '{name}' needs {' and '.join(missing)} (or set them in defaults)",
                )
            ]
        )
    assert project and location
    skip: set[tuple[str, str]] = set()
    for i, entry in enumerate(env.skip):
        collection, _, rid = entry.partition("/")
        kind = by_collection(collection)
        if kind is None or not rid:
            names = sorted(k.collection for k in KINDS.values() if not k.singleton)
            raise ConfigError(
                [
                    _problem_at(
                        config_doc,
                        ("environments", name, "skip", i),
                        f"skip entry {entry!r}: write COLLECTION/ID, COLLECTION one of {', '.join(names)}"
                        + suggest(collection, names),
                    )
                ]
            )
        skip.add((kind.name, rid))
    target = EnvTarget(
        name=name,
        project=project,
        location=location,
        app=env.app,
        endpoint=env.endpoint or d.endpoint,
        vars={**d.vars, **env.vars, **overrides},
        urls=dict(env.urls),
        prune=config.prune if env.prune is None else env.prune,
        impersonate_service_account=env.impersonateServiceAccount,
        quota_project=env.quotaProject,
        quota=_quota(env.quota, d.quota),
        overrides=dict(overrides),
        skip=frozenset(skip),
        sensitive=frozenset({*d.sensitive, *env.sensitive}),
    )
    return replace(target, urls=_urls(target, config_doc))


def _urls(target: EnvTarget, config_doc: Document) -> dict[str, str]:
    """``${NAME}`` in a url takes the environment's variable (a local stub's port, say), so that
    export, pull and rendering all see the url the environment means; ``$${`` is a literal ``${``."""
    from .templating import substitute  # the one ${NAME} substitution; it renders with EnvTarget, so here on use

    out: dict[str, str] = {}
    problems: list[Problem] = []
    for rid, url in target.urls.items():
        out[rid], missing = substitute(url, target, ("environments", target.name, "urls", rid))
        problems += [_problem_at(config_doc, path, message) for path, message in missing]
    if problems:
        raise ConfigError(problems)
    return out


def _quota(env: QuotaSettings | None, defaults: QuotaSettings | None) -> QuotaSettings | None:
    """The environment's quota, each limit it leaves out taken from defaults."""
    if env is None or defaults is None:
        return env or defaults
    return QuotaSettings(
        writesPerMinute=defaults.writesPerMinute if env.writesPerMinute is None else env.writesPerMinute,
        readsPerMinute=defaults.readsPerMinute if env.readsPerMinute is None else env.readsPerMinute,
    )


def shared_apps(config: Config, config_doc: Document) -> list[Problem]:
    """Warnings for environments that name the same app at the same endpoint: a plan or apply
    for one writes the other (embedded environments each have their own state file)."""
    seen: dict[tuple[str, ...], str] = {}
    out: list[Problem] = []
    d = config.defaults
    for name, env in config.environments.items():
        endpoint = env.endpoint or d.endpoint or f"google:{env.location or d.location}"
        if endpoint == EMBEDDED:
            continue
        key = (endpoint, str(env.project or d.project), str(env.location or d.location), env.app)
        if key in seen:
            message = (
                f"environments '{seen[key]}' and '{name}' both point at app '{env.app}' of project '{key[1]}' "
                f"({key[2]}){'' if endpoint.startswith('google:') else ' at ' + endpoint}: applying one changes the other"
            )
            out.append(_problem(config_doc, ("environments", name, "app"), message))
        else:
            seen[key] = name
    return out


def _problem_at(config_doc: Document, path: Path_, message: str) -> Problem:
    return config_doc.problem(path, message)


def _problem(config_doc: Document, path: Path_, message: str) -> Problem:
    return config_doc.problem(path, message, key=True)


def skip_problems(config: Config, config_doc: Document, env: EnvTarget, known: set[tuple[str, str]]) -> list[Problem]:
    """A skip entry that names no resource of the repo (a typo would skip nothing)."""
    entries = config.environments[env.name].skip if env.name in config.environments else []
    out = []
    for i, entry in enumerate(entries):
        collection, _, rid = entry.partition("/")
        found = next(((k, r) for k, r in env.skip if KINDS[k].collection == collection and r == rid), None)
        if found is not None and found not in known:
            ids = [f"{KINDS[k].collection}/{r}" for k, r in sorted(known)]
            out.append(
                config_doc.problem(
                    ("environments", env.name, "skip", i),
                    f"skip entry {entry!r} names no resource of the repo{suggest(entry, ids)}",
                )
            )
    return out
