"""Documents embedded in resource bodies: OpenAPI text and Python source (pure).

Parsed or scanned once per content (cached): one plan meets the same schema or code in the
lint checks, for every environment and on both sides of the diff.
"""

from __future__ import annotations

import ast
import functools
import json
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from .yamlfile import SLOW, fast_load

__all__ = ["parse_document", "python_functions"]


@functools.lru_cache(maxsize=4096)
def parse_document(text: str) -> Any:
    """Parse OpenAPI text (JSON or YAML) into data; raises ValueError on failure.

    Cached by content: one plan meets the same schema in the render check and on both
    sides of the diff. The result is shared, so callers must not modify it.
    """
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            pass
    data = fast_load(text)
    if data is not SLOW:
        return data
    try:
        return YAML(typ="safe", pure=True).load(text)
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ValueError(f"not valid JSON or YAML{where}: {getattr(exc, 'problem', None) or exc}") from None


def python_functions(code: str) -> list[str]:
    return list(_top_functions(code))


@functools.lru_cache(maxsize=4096)
def _top_functions(code: str) -> tuple[str, ...]:
    """Cached by content: every environment (and both sides of a diff) checks the same code."""
    tree = ast.parse(code)
    return tuple(n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
