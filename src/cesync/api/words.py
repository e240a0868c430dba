"""Counts and resource names as sentences say them (no imports: every command uses them)."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["count", "spoken"]


def count(n: int, singular: str, plural: str | None = None) -> str:
    """``1 tool``, ``3 tools``, ``1 remote resource``."""
    return f"{n} {singular if n == 1 else plural or singular + 's'}"


def spoken(words: Iterable[str], conjunction: str = "and") -> str:
    """``tools and toolsets``; ``a, b or c``."""
    items = list(words)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {conjunction} {items[-1]}"
