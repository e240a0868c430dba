"""Renderers of a Plan: text for terminals, Markdown for pull requests, JSON for machines."""

from __future__ import annotations

from ..plan import Plan
from .markdown import MARKER, render_markdown
from .text import render_text, use_color

__all__ = ["FORMATS", "MARKER", "render", "render_markdown", "render_text", "use_color"]

FORMATS = ("text", "json", "markdown")


def render(plan: Plan, fmt: str, *, color: bool = False) -> str:
    if fmt == "json":
        return plan.to_json()
    if fmt == "markdown":
        return render_markdown(plan)
    return render_text(plan, color=color)
