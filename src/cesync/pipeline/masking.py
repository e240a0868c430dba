"""Which fields of a body hold sensitive values: those the repo renders from a sensitive variable
or INPUT_ONLY (sensitive_fields), and those of bodies not rendered from the repo (hidden_fields);
and the one place a command tells its scrubber the values it must mask (remember_sensitive)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

from ..api.jsonvalue import value_at
from ..api.resource import Resource
from ..core.scrubber import Scrubber
from ..core.sensitive import field_paths, input_only_fields, input_only_names, input_only_values
from ..core.yamlfile import Path_
from ..repo.repo import EnvTarget, Repo

if TYPE_CHECKING:  # the HTTP client loads when a command first uses it (see client/__init__.py)
    pass


def remember_sensitive(
    scrubber: Scrubber, repo: Repo, secrets: Mapping[str, str] | None = None, desired: Iterable[Resource] = ()
) -> None:
    """Tell the run's scrubber every value it must mask, before the output that could show one:
    the value of each variable any environment marks sensitive (not just the command's: diff and
    rollback show another's), the environment's resolved ones (secrets, before rendering: a
    problem message must not print one either), and each string of an INPUT_ONLY field of the
    resources rendered (desired: one-time credentials)."""
    scrubber.remember(repo.every_sensitive_value())
    scrubber.remember((secrets or {}).values())
    for d in _with_input_only(desired):
        scrubber.remember(input_only_values(d.kind.model_name, d.body))


def sensitive_fields(
    repo: Repo, env: EnvTarget, desired: list[Resource], secrets: dict[str, str]
) -> dict[tuple[str, str], list[Path_]]:
    """Per resource, the paths of its sensitive values: those of sensitive variables, and every
    INPUT_ONLY field it sets (one-time credentials: never printed, masked in plan files)."""
    names = repo.sensitive_names(env)
    sources = {f.key: f.doc.data for f in repo.files} if names else {}
    out: dict[tuple[str, str], list[Path_]] = {}
    for d in desired if names else _with_input_only(desired):
        model = d.kind.model_name
        paths = field_paths(sources.get(d.key), d.body, names, secrets.values()) if names else []
        paths += [(f,) for f in input_only_fields(model, d.body) if (f,) not in paths]
        if paths:
            out[d.key] = paths
    return out


def _with_input_only(desired: Iterable[Resource]) -> Iterator[Resource]:
    """The resources of the kinds that have INPUT_ONLY fields: no other body sets one."""
    has: dict[str, bool] = {}
    for d in desired:
        model = d.kind.model_name
        if (found := has.get(model)) is None:
            found = has[model] = bool(input_only_names(model))
        if found:
            yield d


def hidden_fields(repo: Repo, env: EnvTarget, bodies: Iterable[Resource]) -> dict[tuple[str, str], list[Path_]]:
    """Per (kind, id), the paths of bodies not rendered from the repo (a snapshot, another
    environment's app) that hold a sensitive value: where the repo's file references a
    sensitive ${NAME}, or where the text holds a value of any environment."""
    names, values = repo.sensitive_names(env), repo.every_sensitive_value()
    sources = {f.key: f.doc.data for f in repo.files}
    found: dict[tuple[str, str], set[Path_]] = {}
    for r in bodies:
        paths = {tuple(p) for p in field_paths(sources.get(r.key), r.body, names, values)}
        # $env_var copies a url into its schema: an old url hides there too
        schemas = {(*p[:-1], "openApiSchema") for p in paths if p and p[-1] == "url"}
        paths |= {p for p in schemas if value_at(r.body, p) is not None}
        found.setdefault(r.key, set()).update(paths)
    return {k: sorted(v, key=lambda p: [str(x) for x in p]) for k, v in found.items() if v}
