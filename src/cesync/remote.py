"""Reading an app: one request per page of each kind, all kinds at once."""

from __future__ import annotations

import asyncio
from typing import Any

from .client import CesClient
from .kinds import KINDS
from .resource import Resource

__all__ = ["list_app", "read_remote"]


async def list_app(client: CesClient, parent: str) -> dict[str, list[dict[str, Any]]]:
    """Every listed resource of the app, by kind (unfiltered: system tools included)."""
    kinds = [k for k in KINDS.values() if k.listable]
    pages = await asyncio.gather(*(client.list_all(parent, k.collection) for k in kinds))
    return {k.name: items for k, items in zip(kinds, pages, strict=True)}


async def read_remote(client: CesClient, parent: str) -> list[Resource]:
    """The resources cesync manages, in registry order."""
    listed = await list_app(client, parent)
    return [
        Resource(kind, str(body["name"]).rsplit("/", 1)[-1], body)
        for kind, items in listed.items()
        for body in items
        if KINDS[kind].managed(body)
    ]
