"""Tools as the repo defines them: the repo applied to a throw-away app, and the deployed app
compared with the repo for the tools a command runs.

``exec --local`` and ``test --local`` run the repo's code, not the deployed code: a pull
request's tests must test the change, and a green run against an app that still holds the
old code says nothing about the new one.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass

from ..api.kinds import KINDS, TOOL_HOLDER, ResourceKind
from ..client.api import CesClient, stderr_line
from ..errors import CesyncError
from .apply import apply_plan
from .context import Context
from .planning import make_plan

__all__ = ["Difference", "deployed_differences", "local_app", "tool_keys"]


@contextlib.asynccontextmanager
async def local_app(ctx: Context) -> AsyncIterator[CesClient]:
    """A fresh in-memory embedded emulator holding the app as the repo renders it for ctx.env.

    Nothing is written to disk and nothing outside this process is touched; the app goes
    when the block ends. Python tools run in the emulator's sandbox, as ``--env local`` does.
    """
    from ..emulator import EmbeddedTransport
    from ..emulator.app import create_app
    from ..emulator.store import Store

    # operations done at once: nobody waits on a throw-away app's CreateApp
    transport = EmbeddedTransport(create_app(Store(None), operation_delay=0))
    async with CesClient(
        "http://embedded", transport=transport, notify=functools.partial(stderr_line, scrubber=ctx.scrubber)
    ) as client:
        plan = await make_plan(ctx, client, prune=False)
        result = await apply_plan(client, plan, parallelism=8)
        if not result.ok:
            failed = [f"{o.action} {o.kind} {o.id}: {o.message}" for o in result.outcomes if o.status != "done"]
            raise CesyncError("the repo could not be applied to a local app: " + "; ".join(failed[:5]))
        yield client


@dataclass(frozen=True)
class Difference:
    """A resource a command runs whose deployed version is not what the repo defines."""

    kind: ResourceKind
    id: str
    action: str  # what a plan would do: create, update, delete
    fields: tuple[str, ...] = ()

    def describe(self) -> str:
        what = f"{self.kind.collection}/{self.id}"
        if self.action == "create":
            return f"{what} is in the repo but not deployed"
        if self.action == "delete":
            return f"{what} is deployed but no longer in the repo"
        shown = ", ".join(self.fields[:4]) + (", ..." if len(self.fields) > 4 else "")
        return f"{what} differs from the repo ({shown})" if shown else f"{what} differs from the repo"


_TOOL = next(k for k in KINDS.values() if k.named_by_type)  # what a tool id names


def tool_keys(tools: Iterable[str], names: dict[str, str]) -> set[str]:
    """The plan keys (``tool/x``, ``toolset/y``) of the tools a command names (id, display name
    or TOOLSET/TOOL_ID), resolved through the app's names as exec and test resolve them."""
    keys: set[str] = set()
    for tool in tools:
        resolved = names.get(tool, tool)
        if "/" in resolved:
            keys.add(f"{TOOL_HOLDER.name}/{resolved.split('/', 1)[0]}")
        else:
            keys.add(f"{_TOOL.name}/{resolved}")
    return keys


async def deployed_differences(ctx: Context, client: CesClient, keys: set[str]) -> list[Difference]:
    """What a plan of ctx against the app would change among keys (pruning counted: a tool the
    repo dropped still runs in the app)."""
    plan = await make_plan(ctx, client, prune=True)
    return [Difference(c.kind, c.id, c.action, tuple(f.path for f in c.fields)) for c in plan.changes if c.key in keys]
