"""Reading an app: one request per page of each kind, all kinds at once."""

from __future__ import annotations

import asyncio

from .client import CesClient
from .kinds import KINDS
from .resource import Resource

__all__ = ["list_app", "read_remote"]


async def list_app(client: CesClient, parent: str) -> dict[str, list[Resource]]:
    """Every listed resource of the app, by kind (unfiltered: system tools included)."""
    kinds = [k.name for k in KINDS.values() if k.listable]
    listed = await asyncio.gather(*(client.resources(parent, k) for k in kinds))
    return dict(zip(kinds, listed, strict=True))


async def read_remote(client: CesClient, parent: str) -> list[Resource]:
    """The resources cesync manages, in registry order."""
    listed = await list_app(client, parent)
    return [r for kind, items in listed.items() for r in items if KINDS[kind].managed(r.body)]
