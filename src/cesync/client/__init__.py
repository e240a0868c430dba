"""Talking to CES: the REST client, authentication, and endpoint selection."""

from typing import TYPE_CHECKING, Any

from .connect import connect  # light: it imports the HTTP client only when called

if TYPE_CHECKING:
    from .api import CesClient, RetryPolicy

__all__ = ["CesClient", "RetryPolicy", "connect"]


def __getattr__(name: str) -> Any:
    """httpx and the rest load when the client is first used, not with the package: plan
    imports them in the thread that reads the app while the repo renders (pipeline.readahead.ReadAhead)."""
    if name in ("CesClient", "RetryPolicy"):
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
