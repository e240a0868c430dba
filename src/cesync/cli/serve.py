"""The local CES emulator as a command."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import click

from ..errors import CesyncError
from . import (
    handled,
    main,
    out,
)

# --- the emulator -----------------------------------------------------------------------------


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on (keep it on loopback).")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="The port to listen on (0: a free one)."
)
@click.option(
    "--state",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Keep the state in this SQLite database file (several emulators may share it).",
)
@click.option("--latency-ms", type=float, default=0.0, help="Fixed latency added to every API call.")
@click.option("--jitter-ms", type=float, default=0.0, help="Random extra latency, up to this much.")
@click.option("--rate-429", type=click.FloatRange(0, 1), default=0.0, help="Share of calls answered RESOURCE_EXHAUSTED.")
@click.option("--rate-503", type=click.FloatRange(0, 1), default=0.0, help="Share of calls answered UNAVAILABLE.")
@click.option("--drop-rate", type=click.FloatRange(0, 1), default=0.0, help="Share of writes committed, then dropped.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the fault dice.")
@click.option("--app", "apps", multiple=True, help="Create this app at start (projects/P/locations/L/apps/A); repeatable.")
@click.option(
    "--auto-create-apps/--no-auto-create-apps",
    default=False,
    show_default=True,
    help="Create an app on its first use (for a client that never calls CreateApp); off, as in CES, an app exists once created "
    "(CreateApp, importApp or --app).",
)
@click.option(
    "--operation-delay",
    type=click.FloatRange(0),
    default=0.2,
    show_default=True,
    help="Seconds before a long-running operation (CreateApp, exportApp, ...) is done.",
)
@click.option(
    "--quota-writes-per-minute",
    type=click.IntRange(0),
    default=0,
    help="Write requests a minute per project and location, as CES's ces.googleapis.com/write_requests quota "
    "(CES's default: 600); over it, 429 RESOURCE_EXHAUSTED. 0 (the default): no quota.",
)
@click.option(
    "--quota-reads-per-minute",
    type=click.IntRange(0),
    default=0,
    help="Read requests a minute per project and location (ces.googleapis.com/read_requests; CES's default: 600). "
    "0 (the default): no quota.",
)
@click.option(
    "--quota-burst",
    type=click.IntRange(0),
    default=0,
    help="Requests a quota lets through at once after a pause; 0 (the default): one second's worth.",
)
@click.option("--quiet", is_flag=True, help="Do not log one line per request to standard error.")
@click.option(
    "--admin",
    is_flag=True,
    help="Serve /admin (state, faults, injected fields: the hooks tests and benchmarks set up through). "
    "Off by default: any program of this machine could read the state or change it there.",
)
@click.option(
    "--api-description",
    "descriptions",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Google's discovery document for CES (ces.v1.json, ces.v1beta.json) newer than the revision cesync ships: "
    "the emulator accepts and serves its fields, as cesync does with the same file in cesync.yaml's api.discovery. "
    "Repeat for v1beta.",
)
@handled
def emulator(
    host: str,
    port: int,
    state: Path | None,
    latency_ms: float,
    jitter_ms: float,
    rate_429: float,
    rate_503: float,
    drop_rate: float,
    seed: int,
    apps: tuple[str, ...],
    auto_create_apps: bool,
    operation_delay: float,
    quota_writes_per_minute: int,
    quota_reads_per_minute: int,
    quota_burst: int,
    quiet: bool,
    admin: bool,
    descriptions: tuple[Path, ...],
) -> None:
    """Run the local CES emulator (export CES_EMULATOR_HOST, then --endpoint emulator)."""
    import re

    if descriptions:
        _use_descriptions(descriptions)

    from ..emulator import FaultConfig
    from ..emulator.quota import QuotaConfig
    from ..emulator.server import serve

    faults = FaultConfig(latency_ms, jitter_ms, rate_429, rate_503, drop_rate, seed=seed)
    for name in apps:
        if not re.fullmatch(r"projects/[^/]+/locations/[^/]+/apps/[a-zA-Z0-9][a-zA-Z0-9_-]{0,127}", name):
            raise CesyncError(f"--app {name}: expected projects/PROJECT/locations/LOCATION/apps/APP")

    def listening(host: str, port: int) -> None:
        # Said once the socket is bound: a port in use is the error below, never after this line.
        at = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"  # an IPv6 address needs its brackets in a URL
        out(
            f"CES emulator on http://{at} (export CES_EMULATOR_HOST={at}, then use --endpoint emulator "
            "or endpoint: emulator in cesync.yaml)",
            err=True,
        )

    try:
        quota = QuotaConfig(quota_writes_per_minute, quota_reads_per_minute, quota_burst)
        serve(
            host,
            port,
            state,
            faults,
            apps=apps,
            auto_create_apps=auto_create_apps,
            operation_delay=operation_delay,
            quota=quota,
            log_requests=not quiet,
            listening=listening,
            admin=admin,
        )
    except OSError as exc:
        at = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        fix = (
            "pick another --port (--port 0 takes a free one)"
            if exc.errno == errno.EADDRINUSE
            else "give --host an address of this machine (an IPv6 one without brackets: --host ::1)"
        )
        raise CesyncError(f"cannot serve on {at}: {exc.strerror or exc}; {fix}") from None


def _use_descriptions(paths: tuple[Path, ...]) -> None:
    """--api-description: each file's version is its own ``version``."""
    import json

    from ..api import descriptors

    documents: dict[str, dict[str, Any]] = {}
    for path in paths:
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            raise CesyncError(f"--api-description {path}: not a JSON file ({type(exc).__name__})") from None
        version = document.get("version") if isinstance(document, dict) else None
        if version not in ("v1", "v1beta") or version in documents:
            raise CesyncError(f"--api-description {path}: give one discovery document of CES v1 and at most one of v1beta")
        documents[str(version)] = document
    try:
        descriptors.use_documents(documents)
    except ValueError as exc:
        raise CesyncError(f"--api-description: {exc}") from None
