"""Talking to CES: the REST client, authentication, and endpoint selection."""

from .api import CesClient, RetryPolicy
from .connect import connect

__all__ = ["CesClient", "RetryPolicy", "connect"]
