"""The keys cesync takes from the process environment: the plan key that binds saved plans
(CESYNC_PLAN_KEY) and the secret applied records are sealed with (CESYNC_RECORD_KEY, else the
plan key). Read here, at the edge, and handed to the pure core as values."""

from __future__ import annotations

import os

__all__ = ["KEY_ENV", "RECORD_KEY_ENV", "plan_key", "record_secret"]

KEY_ENV = "CESYNC_PLAN_KEY"
RECORD_KEY_ENV = "CESYNC_RECORD_KEY"


def plan_key() -> bytes:
    return os.environ.get(KEY_ENV, "").encode()


def record_secret() -> tuple[str, bytes]:
    """(where from, the secret applied records are sealed with): CESYNC_RECORD_KEY, else CESYNC_PLAN_KEY;
    ("", b"") without either (see core/record.py)."""
    for name in (RECORD_KEY_ENV, KEY_ENV):
        if value := os.environ.get(name, ""):
            return name, value.encode()
    return "", b""
