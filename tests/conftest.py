from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cesync.emulator.server import BackgroundServer

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
APP = "projects/p/locations/us/apps/a"


@pytest.fixture
def emulator() -> Iterator[BackgroundServer]:
    with BackgroundServer() as server:
        yield server
