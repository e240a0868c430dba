"""Small in-memory apps for the pass tests: tools of one app, as the repo and the app give them."""

from __future__ import annotations

from typing import Any

from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.core.passes import PlanInput
from cesync.core.plan import Plan
from cesync.core.planbuild import start

P = "projects/p/locations/us/apps/a"


def tool(rid: str, fn: str = "f", **extra: Any) -> Resource:
    """A tool as the repo says it."""
    return Resource(KINDS["tool"], rid, {"clientFunction": {"name": fn}, **extra})


def remote_tool(rid: str, fn: str = "f", **extra: Any) -> Resource:
    """A tool as the app gives it: its full name and an etag."""
    return Resource(KINDS["tool"], rid, {"name": f"{P}/tools/{rid}", "etag": f"e-{rid}", "clientFunction": {"name": fn}, **extra})


def given(desired: list[Resource], remote: list[Resource], **options: Any) -> PlanInput:
    return PlanInput("e", P, desired, remote, **options)


def empty(g: PlanInput) -> Plan:
    return start(g)
