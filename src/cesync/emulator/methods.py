"""The API's methods as the emulator reads them from cesync's API description (``src/cesync/api``,
``ces_v1.json`` and ``ces_v1beta.json``: Google's discovery documents merged by scripts/gen_api.py):
each method's HTTP verb, path and query parameters. The emulator keeps its own statement of what it
serves (dispatch.py, lists.py, unserved.py); what a method is called, where it lives and which
parameters it takes come from here, so a newer description changes them in one place."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from ..api import descriptors

__all__ = ["methods", "query_parameters"]


@cache
def methods(version: str) -> dict[str, dict[str, Any]]:
    """Every method of the description of one API version ("v1", "v1beta"), by its discovery id."""
    source = descriptors.BETA_BEHAVIORS_FILE if version == "v1beta" else descriptors.BEHAVIORS_FILE
    found: dict[str, dict[str, Any]] = json.loads(source.read_text(encoding="utf-8")).get("methods", {})
    return found


@cache
def query_parameters(version: str, method_id: str) -> frozenset[str]:
    """The query parameters the description gives a method (empty when it has no such method)."""
    params = methods(version).get(method_id, {}).get("parameters", {})
    return frozenset(name for name, p in params.items() if p.get("location") == "query")
