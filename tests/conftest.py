from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from cesync.emulator.server import BackgroundServer

# No wall-clock limits on generated cases: the suite shares two cores with everything else on a CI
# machine, where a pure 2 ms example can take 300 ms; a deadline or the too_slow health check then
# fails a test for the machine's load, not for what it asserts. A test's own settings still win.
settings.register_profile("cesync", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("cesync")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
APP = "projects/p/locations/us/apps/a"


@pytest.fixture
def emulator() -> Iterator[BackgroundServer]:
    with BackgroundServer(auto_create_apps=True) as server:  # these tests are about other things
        yield server
