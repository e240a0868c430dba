"""Counts and resource names as sentences say them (no imports: every command uses them)."""

from __future__ import annotations

__all__ = ["count"]


def count(n: int, singular: str, plural: str | None = None) -> str:
    """``1 tool``, ``3 tools``, ``1 remote resource``."""
    return f"{n} {singular if n == 1 else plural or singular + 's'}"
