"""The local CES emulator: a real HTTP server for the CES v1 tools API."""

from .app import create_app
from .faults import ConnectionDropped, FaultConfig
from .quota import QuotaConfig
from .store import Store
from .transport import EmbeddedTransport

__all__ = ["ConnectionDropped", "EmbeddedTransport", "FaultConfig", "QuotaConfig", "Store", "create_app"]
