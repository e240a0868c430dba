"""Reading the OpenAPI documents of tools and toolsets (the emulator's own copy: it shares no code with cesync)."""

from __future__ import annotations

import json
from typing import Any

from ruamel.yaml.error import YAMLError

from .bounded import TooLarge, load_json, load_yaml

HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def parse_document(text: str) -> Any:
    """OpenAPI text (JSON or YAML) as data, read under bounded's limits; ValueError when it is
    neither or is over a limit (the message says which)."""
    if text.lstrip().startswith("{"):
        try:
            return load_json(text)
        except TooLarge:
            raise
        except json.JSONDecodeError:
            pass
    try:
        return load_yaml(text)
    except YAMLError as exc:
        raise ValueError(f"not valid JSON or YAML: {exc}") from None
