"""Reading an app: one request per page of tools and of toolsets, both at once."""

from __future__ import annotations

import asyncio

from .client import CesClient
from .diff import Remote

__all__ = ["read_remote"]


def _managed(body: dict[str, object]) -> bool:
    # System tools come with the app; tools derived from toolsets belong to their toolset.
    return "systemTool" not in body and "/toolsets/" not in str(body.get("name", ""))


async def read_remote(client: CesClient, parent: str) -> list[Remote]:
    tools, toolsets = await asyncio.gather(client.list_all(parent, "tools"), client.list_all(parent, "toolsets"))
    out = [Remote("tool", str(t["name"]).rsplit("/", 1)[-1], t) for t in tools if _managed(t)]
    out += [Remote("toolset", str(t["name"]).rsplit("/", 1)[-1], t) for t in toolsets]
    return out
