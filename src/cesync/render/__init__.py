"""Renderers of a Plan: text for terminals, Markdown for pull requests, JSON for machines.

The renderers are imported when used (the command line starts without them).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..core.plan import Plan
    from .markdown import MARKER, render_markdown
    from .text import render_text, use_color

__all__ = ["FORMATS", "MARKER", "render", "render_markdown", "render_text", "use_color"]

FORMATS = ("text", "json", "markdown")
_LAZY = {"MARKER": "markdown", "render_markdown": "markdown", "render_text": "text", "use_color": "text"}


def render(plan: Plan, fmt: str, *, color: bool = False) -> str:
    if fmt == "json":
        return plan.to_json()
    if fmt == "markdown":
        from .markdown import render_markdown

        return render_markdown(plan)
    from .text import render_text

    return render_text(plan, color=color)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
