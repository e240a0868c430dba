"""From an environment to a client: embedded emulator, emulator URL, or Google."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import CesyncError
from ..repo.config import EMBEDDED, EMULATOR, normalize_endpoint
from ..repo.environments import EnvTarget

if TYPE_CHECKING:
    from ..core.scrubber import Scrubber
    from .api import CesClient, RetryPolicy
    from .pacing import Quota

__all__ = ["EMULATOR_HOST_VAR", "connect", "embedded_state", "endpoint_for", "quota_for"]

GOOGLE = {"us": "https://ces.us.rep.googleapis.com", "eu": "https://ces.eu.rep.googleapis.com"}
GLOBAL = "https://ces.googleapis.com"


EMULATOR_HOST_VAR = "CES_EMULATOR_HOST"


def endpoint_for(env: EnvTarget, override: str | None = None) -> str:
    """--endpoint, then the environment's endpoint, then Google's; CES_EMULATOR_HOST only where they allow it.

    --endpoint and ``endpoint:`` go through the same check (config.normalize_endpoint). 'emulator'
    (in either) means CES_EMULATOR_HOST. The variable also replaces an emulator endpoint (embedded,
    http://), but never one of the CES API (https://, or none): an exported variable left over from
    a local session must not send ``plan --env prod`` to an emulator, so that is an error.
    """
    host = os.environ.get(EMULATOR_HOST_VAR) or None
    if override:
        chosen = _checked(override, "--endpoint")
        return _emulator(host, "--endpoint emulator") if chosen == EMULATOR else chosen
    if env.endpoint:
        chosen = _checked(env.endpoint, f"environment '{env.name}'")
        if chosen == EMULATOR:
            return _emulator(host, f"environment '{env.name}' (endpoint: emulator)")
    else:
        chosen = GOOGLE.get(env.location, GLOBAL)
    if host is None:
        return chosen
    if chosen.startswith("https://"):
        raise CesyncError(
            f"{EMULATOR_HOST_VAR} is set ({host}) but environment '{env.name}' points at the CES API ({chosen}); "
            f"refusing to guess which one you mean. Unset {EMULATOR_HOST_VAR} to use {chosen}, or pass "
            f"--endpoint emulator (or CESYNC_ENDPOINT=emulator) to use the emulator"
        )
    return _host_url(host)


def _checked(value: str, what: str) -> str:
    try:
        return normalize_endpoint(value)
    except ValueError as exc:
        raise CesyncError(f"{what}: {exc}") from None


def _emulator(host: str | None, what: str) -> str:
    if host is None:
        raise CesyncError(f"{what} needs {EMULATOR_HOST_VAR}=host:port (the address 'cesync emulator' prints), and it is not set")
    return _host_url(host)


def _host_url(host: str) -> str:
    return host if host.startswith(("http://", "https://")) or host == EMBEDDED else f"http://{host}"


def quota_for(env: EnvTarget, google: bool) -> Quota:
    """The environment's ``quota:``; absent, CES's documented defaults on Google, none on an emulator."""
    from .pacing import CES_DEFAULT_QUOTA, Quota

    told = env.quota
    default = CES_DEFAULT_QUOTA if google else Quota()
    if told is None:
        return default
    return Quota(
        default.writes_per_minute if told.writesPerMinute is None else told.writesPerMinute,
        default.reads_per_minute if told.readsPerMinute is None else told.readsPerMinute,
    )


def embedded_state(root: Path, env_name: str) -> Path:
    """The embedded emulator's state of one environment: an SQLite database, ``.cesync/<env>.sqlite``.

    Earlier versions called it ``<env>.json`` (it held JSON once, then SQLite under the same
    name); such a file is moved to the new name on first use, its -wal and -shm files along,
    and the store reads a JSON one as the state it is (``Store``'s legacy load)."""
    folder = root / ".cesync"
    state = folder / f"{env_name}.sqlite"
    old = folder / f"{env_name}.json"
    _own_files(root, folder, [Path(f"{f}{suffix}") for f in (state, old) for suffix in ("", "-wal", "-shm")])
    if not state.exists() and old.is_file():
        for suffix in ("", "-wal", "-shm"):
            if Path(f"{old}{suffix}").exists():
                os.replace(f"{old}{suffix}", f"{state}{suffix}")
    return state


def _own_files(root: Path, folder: Path, files: list[Path]) -> None:
    """The state's folder and files are the repo's own, not symlinks a branch planted: SQLite
    follows a link to open, create and write a file (and its -wal and -shm beside it) anywhere
    the job may write."""
    top = root.resolve()
    linked = [p for p in (folder, *files) if p.is_symlink()]
    if linked or (folder.exists() and not folder.resolve().is_relative_to(top)):
        shown = linked[0].relative_to(root) if linked else folder.relative_to(root)
        raise CesyncError(
            f"{shown} is a symlink or leads out of the repo: the embedded emulator keeps its state only in "
            "files of the repo's own .cesync folder; remove the link"
        )


def connect(
    env: EnvTarget,
    root: Path,
    *,
    override: str | None = None,
    retry: RetryPolicy | None = None,
    max_connections: int = 32,
    scrubber: Scrubber,
) -> CesClient:
    """The client of env's endpoint; its retry and quota lines go to standard error through the
    run's scrubber (they quote the server's messages, which may echo a request body)."""
    from .api import CesClient, RetryPolicy, stderr_line  # here, not at import: endpoint_for needs no HTTP library
    from .auth import GoogleAuth, check_trusted, default_credentials

    endpoint = endpoint_for(env, override)
    notify = functools.partial(stderr_line, scrubber=scrubber)
    if retry is None and os.environ.get("CESYNC_RETRY_ATTEMPTS", "").isdigit():
        retry = RetryPolicy(attempts=max(1, int(os.environ["CESYNC_RETRY_ATTEMPTS"])))
    if endpoint == EMBEDDED:
        from ..emulator import EmbeddedTransport

        state = embedded_state(root, env.name)
        # as in CES, the app exists once created: apply creates it (CreateApp), nothing invents it
        transport = EmbeddedTransport(state=state, auto_create_apps=False, close_with_client=True)
        quota = quota_for(env, google=False)
        return CesClient(
            "http://embedded", transport=transport, retry=retry, max_connections=max_connections, quota=quota, notify=notify
        )
    host = os.environ.get(EMULATOR_HOST_VAR)
    if endpoint.startswith("http://") or (host and endpoint == _host_url(host)):  # an emulator: anonymous
        return CesClient(
            endpoint, retry=retry, max_connections=max_connections, quota=quota_for(env, google=False), notify=notify
        )
    check_trusted(endpoint)  # before credentials are looked up and before any connection is opened
    credentials = default_credentials(env.impersonate_service_account, env.quota_project)
    auth = GoogleAuth(credentials, env.quota_project)
    quota = quota_for(env, google=True)
    return CesClient(endpoint, auth=auth, retry=retry, max_connections=max_connections, quota=quota, notify=notify)
