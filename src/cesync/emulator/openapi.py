"""Reading the OpenAPI documents of tools and toolsets (the emulator's own copy: it shares no code with cesync)."""

from __future__ import annotations

import json
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def parse_document(text: str) -> Any:
    """OpenAPI text (JSON or YAML) as data; ValueError when it is neither."""
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            pass
    try:
        return YAML(typ="safe", pure=True).load(text)
    except YAMLError as exc:
        raise ValueError(f"not valid JSON or YAML: {exc}") from None
