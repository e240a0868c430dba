"""``cesync release``: a new app version moved onto a deployment step by step, gated by evaluations.

The version is the one the environment's last apply recorded (or one named). Before any traffic
moves, the gate (the repo's evaluations by tag, core.release.Gate) judges that version; then each
step writes the deployment's traffic split, holds, and the gate judges the deployment (every
version it serves). The last step's pass makes the new version serve alone; a failed gate puts the
version served before back, alone. Where a release stands is read from the deployment itself
(core.release.position), so a release stopped anywhere resumes where it was, and every write first
reads the deployment again and refuses when its split is not the one this release left (someone
else moved the traffic). Deployment.etag is output only (discovery document ces.v1.json, revision
20261016), so a server need not honour it: it is sent, and the read before each write is the guard.

Holds wait on the clock handed in (tests hand in one that never sleeps).
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from ..core.release import Position, ReleaseSpec, finish_body, position, rollback_body, schedule, step_body
from ..errors import CesyncError, NotFound

if TYPE_CHECKING:
    from ..client.api import CesClient
    from .context import Context

__all__ = ["Clock", "Gate", "ReleaseRefused", "ReleaseResult", "SystemClock", "evaluation_gate", "release"]


class ReleaseRefused(CesyncError):
    """The deployment's traffic is not where this release left it (or never was cesync's)."""


class Clock(Protocol):
    def now(self) -> datetime.datetime: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def now(self) -> datetime.datetime:
        return datetime.datetime.now(datetime.timezone.utc)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


# (what to judge: {"appVersion": NAME} or {"deployment": NAME}) -> (passed, a summary for the record)
Gate = Callable[[dict[str, str]], Awaitable[tuple[bool, dict[str, Any]]]]


@dataclass
class ReleaseResult:
    environment: str
    deployment: str
    target: str
    previous: str = ""
    outcome: str = ""  # released, rolled back, gate failed, already serving, dry run
    schedule: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    resumed_at: int = 0  # 1-based step a resumed release found the deployment on (0: it started)

    @property
    def ok(self) -> bool:
        return self.outcome in ("released", "already serving", "dry run")

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": 1,
            "environment": self.environment,
            "deployment": self.deployment,
            "target": self.target,
            "previous": self.previous,
            "outcome": self.outcome,
            "ok": self.ok,
            "resumedAt": self.resumed_at,
            "schedule": self.schedule,
            "events": self.events,
        }


def evaluation_gate(ctx: Context, client: CesClient, spec: ReleaseSpec) -> Gate:
    """The repo's evaluations with the gate's tags, run against what is given (pipeline.evaluate)."""
    from .evaluate import evaluate

    async def gate(against: dict[str, str]) -> tuple[bool, dict[str, Any]]:
        report = await evaluate(
            ctx, client, tags=spec.gate.tags, runs=spec.gate.runs, min_pass_rate=spec.gate.minPassRate, against=against
        )
        counts = report.counts()
        return report.passed, {"run": report.run, "counts": counts, "minPassRate": spec.gate.minPassRate}

    return gate


async def release(
    ctx: Context,
    client: CesClient,
    deployment: str,
    spec: ReleaseSpec,
    *,
    version: str | None = None,
    clock: Clock | None = None,
    gate: Gate | None = None,
    dry_run: bool = False,
    say: Callable[[dict[str, Any]], None] = lambda event: None,
) -> ReleaseResult:
    """Release version (default: the environment's last applied record) onto the deployment.

    say is told each event as it happens (a step's plan, a hold, a gate, the end)."""
    clock = clock or SystemClock()
    parent = ctx.env.parent
    name = f"{parent}/deployments/{deployment}"
    draft = f"{parent}/versions/-"
    current = await _deployment(client, name)
    target = await _target(client, ctx, version)
    result = ReleaseResult(ctx.env.name, name, target)

    def tell(kind: str, **detail: Any) -> None:
        event = {"event": kind, "at": clock.now().isoformat(), **detail}
        result.events.append(event)
        say(event)

    at = position(current, target, spec, draft)
    if at.stage == "foreign":
        raise ReleaseRefused(
            f"deployment {deployment}: {at.why}; cesync release moves only a split it made (fix it by hand first)"
        )
    result.previous = at.previous
    plans = schedule(at, spec)
    result.schedule = [p.public() for p in plans]
    if at.stage == "done":
        result.outcome = "already serving"
        tell("done", message=f"{deployment} already serves {target} alone")
        return result
    if dry_run:
        result.outcome = "dry run"
        return result
    judge = gate or evaluation_gate(ctx, client, spec)
    if at.stage == "fresh":
        passed, summary = await judge({"appVersion": target})
        tell("gate", against=target, passed=passed, **summary)
        if not passed:
            result.outcome = "gate failed"
            return result
    else:
        result.resumed_at = at.step + 1
        tell("resume", step=at.step + 1, share=at.share)
    expected = at
    for plan in plans:
        if plan.done:
            began = _time(current.get("updateTime")) or clock.now()
            remaining = max(0.0, plan.hold - (clock.now() - began).total_seconds())
        else:
            body, mask = step_body(at.previous, target, plan.share)
            current = await _guarded(client, name, expected, spec, draft, body, mask)
            expected = Position("running", target, previous=at.previous, step=plan.index, share=plan.share)
            tell("step", **plan.public())
            remaining = plan.hold
        if remaining > 0:
            tell("hold", step=plan.index + 1, seconds=round(remaining, 3))
            await clock.sleep(remaining)
        passed, summary = await judge({"deployment": name})
        tell("gate", against=name, step=plan.index + 1, passed=passed, **summary)
        if not passed:
            body, mask = rollback_body(at.previous)
            await _guarded(client, name, expected, spec, draft, body, mask)
            result.outcome = "rolled back"
            tell("rollback", serving=at.previous)
            return result
    body, mask = finish_body(target)
    await _guarded(client, name, expected, spec, draft, body, mask)
    result.outcome = "released"
    tell("done", serving=target)
    return result


async def _deployment(client: CesClient, name: str) -> dict[str, Any]:
    try:
        return await client.get(name)
    except NotFound:
        raise CesyncError(f"{name} does not exist: apply the repo first (deployments/{name.rsplit('/', 1)[-1]}.yaml)") from None


async def _target(client: CesClient, ctx: Context, version: str | None) -> str:
    from ..client.apps import get_version
    from ..sync.record import last_applied

    parent = ctx.env.parent
    if version:
        name = version if version.startswith(f"{parent}/versions/") else f"{parent}/versions/{version}"
        if await get_version(client, name) is None:
            raise CesyncError(f"--version: {name} does not exist ('cesync versions --env {ctx.env.name}' lists them)")
        return name
    record = await last_applied(client, ctx.env)
    if record is None:
        raise CesyncError(
            f"'{ctx.env.name}' has no applied record to release: apply first (each apply records an app version), "
            "or name one with --version"
        )
    return record.version


async def _guarded(
    client: CesClient,
    name: str,
    expected: Position,
    spec: ReleaseSpec,
    draft: str,
    body: dict[str, Any],
    mask: list[str],
) -> dict[str, Any]:
    """Write body if the deployment still stands where this release left it; ReleaseRefused otherwise."""
    current = await client.get(name)
    now_at = position(current, expected.target, spec, draft)
    if replace(now_at, why="") != replace(expected, why=""):
        seen = now_at.why or f"{now_at.stage}, {expected.target} at {now_at.share}%"
        raise ReleaseRefused(
            f"{name}: someone else moved its traffic since this release last wrote it ({seen}); nothing was written. "
            "Run 'cesync release' again to continue from where it stands, or fix the split by hand"
        )
    return (await client.patch(name, {**body, "etag": str(current.get("etag", ""))}, mask)).unwrap()


def _time(value: Any) -> datetime.datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
