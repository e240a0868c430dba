"""``cesync eval`` end to end: the repo's evaluations, run in the environment's app, judged.

The evaluations run are the repo's (``evaluations/<id>.yaml``), chosen by ``--tag``; each
must already be in the app (apply or preview puts it there), since runEvaluation runs what
the app holds. One the app holds otherwise than the repo (not applied since it changed, or
changed in the app) is still run as the app has it, with a warning naming it and the
fields that differ, as plan would find them: the run judges the app, which is what CES
serves. The thresholds are the repo's ``evaluationMetricsThresholds`` (app.yaml) when
it names them, else the app's, else v1beta's defaults (see core/evalreport.py).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..api.resource import Resource
from ..api.words import count
from ..core.diff import diff_resource
from ..core.evalreport import Report, build_report
from ..errors import CesyncError, NotFound

if TYPE_CHECKING:
    from ..client.api import CesClient
    from ..client.apps import Polling
    from .context import Context

__all__ = ["choose", "differing", "evaluate", "thresholds_of"]

SHOWN_FIELDS = 3  # fields named in a warning; plan shows them all


def choose(desired: Iterable[Resource], tags: Iterable[str], only: Iterable[str] | None = None) -> list[Resource]:
    """The repo's evaluations that carry any of tags (all without tags); a tag none carries is an error.

    only: evaluation ids (eval --affected-by: those a plan puts at risk); one the repo lacks is left out."""
    evaluations = sorted((r for r in desired if r.kind.run_by_eval), key=lambda r: r.id)
    if only is not None:
        wanted_ids = set(only)
        evaluations = [r for r in evaluations if r.id in wanted_ids]
    if not evaluations and only is None:
        raise CesyncError("the repo has no evaluations: add evaluations/<id>.yaml (see docs/evaluations.md)")
    if not evaluations:
        raise CesyncError("none of the evaluations the plan puts at risk is in the repo any more")
    wanted = list(dict.fromkeys(tags))
    if not wanted:
        return evaluations
    known = sorted({str(t) for r in evaluations for t in r.body.get("tags") or []})
    unknown = [t for t in wanted if t not in known]
    if unknown:
        close = [c for t in unknown for c in difflib.get_close_matches(t, known, n=1)]
        hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
        tags_said = ", ".join(known) if known else "none"
        raise CesyncError(f"no evaluation has the tag {', '.join(map(repr, unknown))} (tags in the repo: {tags_said}){hint}")
    return [r for r in evaluations if set(wanted) & {str(t) for t in r.body.get("tags") or []}]


def differing(chosen: Iterable[Resource], remote: Mapping[str, dict[str, Any]], parent: str) -> list[str]:
    """One warning per evaluation the app holds otherwise than the repo, compared as plan compares."""
    warnings = []
    for r in chosen:
        theirs = remote.get(r.kind.resource_name(parent, r.id))
        fields = diff_resource(r.kind, r.id, r.body, theirs).fields if theirs is not None else []
        if fields:
            paths = [f.path for f in fields]
            named = ", ".join(paths[:SHOWN_FIELDS]) + (
                f" and {len(paths) - SHOWN_FIELDS} more" if len(paths) > SHOWN_FIELDS else ""
            )
            warnings.append(
                f"warning: {r.kind.collection}/{r.id} differs from the app's ({named}): the app's is run; "
                "'cesync plan' shows the difference, 'cesync apply' (or 'cesync preview') puts the repo's in the app"
            )
    return warnings


def thresholds_of(desired: Iterable[Resource], app: dict[str, Any] | None) -> tuple[dict[str, Any] | None, str]:
    """(thresholds, where from): the repo's app settings, the app's, or none (v1beta's defaults)."""
    mine = next((r for r in desired if r.kind.singleton), None)
    given = mine.body.get("evaluationMetricsThresholds") if mine is not None else None
    if isinstance(given, dict) and given:
        return given, "repo"
    theirs = (app or {}).get("evaluationMetricsThresholds")
    if isinstance(theirs, dict) and theirs:
        return theirs, "app"
    return None, "v1beta defaults"


async def evaluate(
    ctx: Context,
    client: CesClient,
    *,
    tags: Iterable[str] = (),
    runs: int = 1,
    min_pass_rate: float = 1.0,
    polling: Polling | None = None,
    warn: Callable[[str], None] = lambda line: None,
    against: dict[str, str] | None = None,
    only: Iterable[str] | None = None,
) -> Report:
    """Run the chosen evaluations runs times each in ctx's app; the report of that run.
    warn: told each evaluation the app holds otherwise than the repo, before the run.
    against: an app version or a deployment to judge instead of the draft (client.evaluations)."""
    from ..client.apps import get_app
    from ..client.evaluations import list_evaluations, run_evaluations

    chosen = choose(ctx.desired, tags, only)
    parent = ctx.env.parent
    app = await get_app(client, parent)
    if app is None:
        raise CesyncError(f"the app {parent} does not exist: apply the repo first (cesync apply, or cesync preview)")
    try:
        remote = {str(e.get("name")): e for e in await list_evaluations(client, parent)}
    except NotFound:
        remote = {}
    names = [f"{parent}/evaluations/{r.id}" for r in chosen]
    missing = [r.id for r, n in zip(chosen, names, strict=True) if n not in remote]
    if missing:
        raise CesyncError(
            f"{count(len(missing), 'evaluation')} of the repo {'is' if len(missing) == 1 else 'are'} not in {parent}: "
            f"{', '.join(missing)}; apply the repo first (cesync apply, or cesync preview)"
        )
    for line in differing(chosen, remote, parent):
        warn(line)
    thresholds, source = thresholds_of(ctx.desired, app)
    read = await run_evaluations(
        client, parent, names, run_count=runs, display_name=f"cesync eval ({ctx.env.name})", polling=polling, against=against
    )
    tags_by_id = {r.id: tuple(str(t) for t in r.body.get("tags") or ()) for r in chosen}
    return build_report(
        ctx.env.name,
        parent,
        read.run,
        [remote[n] for n in names],
        read.results,
        thresholds,
        thresholds_from=source,
        tags=tags_by_id,
        min_pass_rate=min_pass_rate,
    )
