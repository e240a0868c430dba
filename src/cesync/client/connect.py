"""From an environment to a client: embedded emulator, emulator URL, or Google."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import CesyncError
from ..repo.config import EMBEDDED, normalize_endpoint
from ..repo.environments import EnvTarget

if TYPE_CHECKING:
    from .api import CesClient, RetryPolicy
    from .pacing import Quota

__all__ = ["connect", "endpoint_for", "quota_for"]

GOOGLE = {"us": "https://ces.us.rep.googleapis.com", "eu": "https://ces.eu.rep.googleapis.com"}
GLOBAL = "https://ces.googleapis.com"


def endpoint_for(env: EnvTarget, override: str | None = None) -> str:
    """--endpoint, then CES_EMULATOR_HOST, then the environment's endpoint, then Google's.

    --endpoint and ``endpoint:`` go through the same check (config.normalize_endpoint).
    """
    if override:
        try:
            return normalize_endpoint(override)
        except ValueError as exc:
            raise CesyncError(f"--endpoint: {exc}") from None
    host = os.environ.get("CES_EMULATOR_HOST")
    if host:
        return host if host.startswith(("http://", "https://")) or host == EMBEDDED else f"http://{host}"
    if env.endpoint:
        try:
            return normalize_endpoint(env.endpoint)
        except ValueError as exc:
            raise CesyncError(f"environment '{env.name}': {exc}") from None
    return GOOGLE.get(env.location, GLOBAL)


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


def connect(
    env: EnvTarget, root: Path, *, override: str | None = None, retry: RetryPolicy | None = None, max_connections: int = 32
) -> CesClient:
    from .api import CesClient, RetryPolicy  # here, not at import: endpoint_for needs no HTTP library
    from .auth import GoogleAuth, check_trusted, default_credentials

    endpoint = endpoint_for(env, override)
    if retry is None and os.environ.get("CESYNC_RETRY_ATTEMPTS", "").isdigit():
        retry = RetryPolicy(attempts=max(1, int(os.environ["CESYNC_RETRY_ATTEMPTS"])))
    if endpoint == EMBEDDED:
        from ..emulator import EmbeddedTransport

        state = root / ".cesync" / f"{env.name}.json"
        # as in CES, the app exists once created: apply creates it (CreateApp), nothing invents it
        transport = EmbeddedTransport(state=state, auto_create_apps=False)
        quota = quota_for(env, google=False)
        return CesClient("http://embedded", transport=transport, retry=retry, max_connections=max_connections, quota=quota)
    if endpoint.startswith("http://") or os.environ.get("CES_EMULATOR_HOST"):  # an emulator: anonymous
        return CesClient(endpoint, retry=retry, max_connections=max_connections, quota=quota_for(env, google=False))
    check_trusted(endpoint)  # before credentials are looked up and before any connection is opened
    credentials = default_credentials(env.impersonate_service_account, env.quota_project)
    auth = GoogleAuth(credentials, env.quota_project)
    return CesClient(endpoint, auth=auth, retry=retry, max_connections=max_connections, quota=quota_for(env, google=True))
