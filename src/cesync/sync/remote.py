"""Reading an app: the app itself and one request per page of each kind, all at once."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ..api.kinds import APP, KINDS
from ..api.resource import Resource
from ..errors import CesyncError

if TYPE_CHECKING:
    from ..client import CesClient

__all__ = ["list_app", "read_existing", "read_remote"]


async def list_app(client: CesClient, parent: str) -> dict[str, list[Resource]]:
    """Every listed resource of the app, by kind (unfiltered: system tools included)."""
    kinds = [k.name for k in KINDS.values() if k.listable]
    # Every list finishes before an error is raised: one failing first must not leave the others
    # running unawaited (their errors were printed as "Task exception was never retrieved" tracebacks).
    listed = await asyncio.gather(*(client.resources(parent, k) for k in kinds), return_exceptions=True)
    failed = next((x for x in listed if isinstance(x, BaseException)), None)
    if failed is not None:
        raise failed
    return {k: items for k, items in zip(kinds, listed, strict=True) if not isinstance(items, BaseException)}


async def read_remote(client: CesClient, parent: str) -> list[Resource]:
    """The resources cesync manages, in registry order; the app first when it exists, nothing when it does not."""
    from ..client.apps import get_app  # with the client: plan imports it in the thread that reads ahead

    app, listed = await asyncio.gather(get_app(client, parent), list_app(client, parent), return_exceptions=True)
    if isinstance(app, BaseException):
        raise app
    if app is None:
        return []  # no app, nothing in it (the lists' NOT_FOUND says the same)
    if isinstance(listed, BaseException):
        raise listed
    return [Resource(APP, APP, app)] + [r for kind, items in listed.items() for r in items if KINDS[kind].managed(r.body)]


async def read_existing(client: CesClient, parent: str) -> list[Resource]:
    """read_remote for commands that write files from the app: a missing app is an error, not an empty app."""
    remote = await read_remote(client, parent)
    if not remote:
        raise CesyncError(f"the app {parent} does not exist (check project, location and app); nothing was written")
    return remote
