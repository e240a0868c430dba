"""Talking to CES: the REST client, authentication, and endpoint selection."""

import sys

# httpx imports its command-line client, and with it rich and pygments (about half of
# httpx's import time), only to offer httpx.main, which cesync never calls. With None in
# sys.modules that import fails and httpx defines a stub main instead.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

from .api import CesClient, RetryPolicy  # noqa: E402
from .connect import connect  # noqa: E402

__all__ = ["CesClient", "RetryPolicy", "connect"]
