"""The runner's side of the line protocol (one JSON object per line on the real stdout)."""

import json
import sys
from typing import Any

PROTOCOL = sys.stdout  # kept: the tool's prints are sent to stderr once the request is read
MEMORY: dict[str, str] = {}  # what the first message says of the call's memory cgroup


def send(message: dict[str, Any]) -> None:
    PROTOCOL.write(json.dumps(message) + "\n")
    PROTOCOL.flush()
