"""Talking to CES: the REST client, authentication, and endpoint selection."""

import sys

# httpx imports its command-line client, and with it rich and pygments (about half of
# httpx's import time), only to offer httpx.main, which cesync never calls. With None in
# sys.modules that import fails and httpx defines a stub main instead.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

from typing import TYPE_CHECKING, Any  # noqa: E402

from .connect import connect  # noqa: E402  (light: it imports the HTTP client only when called)

if TYPE_CHECKING:
    from .api import CesClient, RetryPolicy

__all__ = ["CesClient", "RetryPolicy", "connect"]


def __getattr__(name: str) -> Any:
    """httpx and the rest load when the client is first used, not with the package: plan
    imports them in the thread that reads the app while the repo renders (workflow._ReadAhead)."""
    if name in ("CesClient", "RetryPolicy"):
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
