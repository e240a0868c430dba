"""google-auth credentials as an ``httpx.Auth``, and the hosts they may be sent to.

google-auth has no httpx transport; token refresh goes through its ``requests``
transport, which the package declares (``google-auth[requests]``): google-auth
itself imports ``requests`` for the metadata server (GCE, Cloud Run, GKE) and for
workload identity federation, so an httpx adapter alone would not be enough.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncGenerator, Generator
from typing import Any

import httpx

from ..errors import CesyncError, Unauthenticated

__all__ = ["SCOPES", "TRUSTED_HOSTS_VAR", "GoogleAuth", "check_trusted", "default_credentials", "is_trusted"]

SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]
TRUSTED_HOSTS_VAR = "CESYNC_TRUSTED_HOSTS"
GOOGLE_DOMAIN = "googleapis.com"


def _trusted_entries() -> set[str]:
    """Hosts the process (never a repo file) trusts besides googleapis.com."""
    return {h.strip().lower().rstrip(".") for h in os.environ.get(TRUSTED_HOSTS_VAR, "").split(",") if h.strip()}


def is_trusted(url: str | httpx.URL) -> bool:
    """May Google credentials be sent to this URL? Only https, only trusted hosts."""
    try:
        parsed = httpx.URL(url) if isinstance(url, str) else url
    except httpx.InvalidURL:
        return False
    host = parsed.host.lower().rstrip(".")
    if parsed.scheme != "https" or not host or parsed.userinfo:
        return False
    if host == GOOGLE_DOMAIN or host.endswith("." + GOOGLE_DOMAIN):
        return True
    entries = _trusted_entries()
    return host in entries or (parsed.port is not None and f"{host}:{parsed.port}" in entries)


def check_trusted(url: str | httpx.URL) -> None:
    """Refuse, before any connection, to send credentials to a host nobody trusted."""
    if is_trusted(url):
        return
    parsed = httpx.URL(url) if isinstance(url, str) else url
    host = parsed.host or str(url)
    if parsed.scheme != "https":
        reason = "Google credentials travel only over https"
    else:
        reason = f"host '{host}' is not under {GOOGLE_DOMAIN} and not listed in {TRUSTED_HOSTS_VAR}"
    raise CesyncError(
        f"refusing to send Google credentials to {parsed.scheme}://{host}: {reason}. If you trust this host, "
        f"add it to the {TRUSTED_HOSTS_VAR} environment variable of the process (comma-separated; "
        "a file in the repo cannot add one); for an emulator use an http:// endpoint, which gets no credentials"
    )


def default_credentials(impersonate: str | None = None, quota_project: str | None = None) -> Any:
    """Application Default Credentials, optionally impersonating a service account.

    The quota project of the ADC (cesync.yaml's quotaProject, GOOGLE_CLOUD_QUOTA_PROJECT
    or the one in the ADC file) is kept when impersonating: google-auth's impersonated
    credentials would otherwise drop it, and with it ``x-goog-user-project``.
    """
    import google.auth
    from google.auth import exceptions as auth_exceptions
    from google.auth import impersonated_credentials

    try:
        credentials, _ = google.auth.default(scopes=SCOPES, quota_project_id=quota_project)
    except auth_exceptions.DefaultCredentialsError as exc:
        raise Unauthenticated(
            f"no Google credentials found ({exc}); run 'gcloud auth application-default login', "
            "set GOOGLE_APPLICATION_CREDENTIALS, or use the emulator (endpoint: embedded or CES_EMULATOR_HOST)"
        ) from None
    if impersonate:
        credentials = impersonated_credentials.Credentials(  # type: ignore[no-untyped-call]
            source_credentials=credentials,
            target_principal=impersonate,
            target_scopes=SCOPES,
            quota_project_id=quota_project or getattr(credentials, "quota_project_id", None),
        )
    return credentials


class GoogleAuth(httpx.Auth):
    """Sets ``Authorization: Bearer``; refreshes under a lock, in a thread for async use.

    Every request is checked against the trusted hosts before it is signed, so a
    redirect or a changed base URL cannot carry the token elsewhere.
    """

    requires_response_body = False

    def __init__(self, credentials: Any, quota_project: str | None = None) -> None:
        self.credentials = credentials
        self.quota_project = quota_project or getattr(credentials, "quota_project_id", None)
        self._lock = threading.Lock()
        self.refreshes = 0

    def _refresh(self, stale_token: str | None = None) -> None:
        """Refresh when the token is not valid, or still the one a 401 rejected."""
        import google.auth.transport.requests
        from google.auth import exceptions as auth_exceptions

        with self._lock:  # concurrent requests: one refresh, the others reuse its token
            if self.credentials.valid and (stale_token is None or self.credentials.token != stale_token):
                return
            try:
                self.credentials.refresh(google.auth.transport.requests.Request())
            except auth_exceptions.GoogleAuthError as exc:
                raise Unauthenticated(f"could not refresh Google credentials: {exc}") from None
            self.refreshes += 1

    def _sign(self, request: httpx.Request) -> str:
        check_trusted(request.url)
        token = str(self.credentials.token)
        request.headers["Authorization"] = f"Bearer {token}"
        if self.quota_project:
            request.headers["x-goog-user-project"] = self.quota_project
        return token

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        check_trusted(request.url)
        self._refresh()
        sent = self._sign(request)
        response = yield request
        if response.status_code == 401:
            self._refresh(stale_token=sent)
            self._sign(request)
            yield request

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        check_trusted(request.url)
        if not self.credentials.valid:
            await asyncio.to_thread(self._refresh)
        sent = self._sign(request)
        response = yield request
        if response.status_code == 401:
            await asyncio.to_thread(self._refresh, sent)
            self._sign(request)
            yield request
