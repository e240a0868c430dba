"""Counts and resource names as sentences say them (no imports: every command uses them)."""

from __future__ import annotations

__all__ = ["count", "label"]


def count(n: int, singular: str, plural: str | None = None) -> str:
    """``1 tool``, ``3 tools``, ``1 remote resource``."""
    return f"{n} {singular if n == 1 else plural or singular + 's'}"


def label(kind: str, rid: str) -> str:
    """How a resource is named in a sentence: ``tool greet``; the app itself as ``the app`` (its
    id is its kind's name, so ``app app`` said nothing)."""
    return "the app" if kind == "app" else f"{kind} {rid}"
