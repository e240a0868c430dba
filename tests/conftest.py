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
    with BackgroundServer(auto_create_apps=True) as server:  # these tests are about other things
        yield server
