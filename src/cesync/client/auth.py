"""google-auth credentials as an ``httpx.Auth`` (google-auth has no httpx transport)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Generator
from typing import Any

import httpx

from ..errors import Unauthenticated

__all__ = ["SCOPES", "GoogleAuth", "default_credentials"]

SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]


def default_credentials(impersonate: str | None = None, quota_project: str | None = None) -> Any:
    """Application Default Credentials, optionally impersonating a service account."""
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
            source_credentials=credentials, target_principal=impersonate, target_scopes=SCOPES
        )
    return credentials


class GoogleAuth(httpx.Auth):
    """Sets ``Authorization: Bearer``; refreshes under a lock, in a thread for async use."""

    requires_response_body = False

    def __init__(self, credentials: Any, quota_project: str | None = None) -> None:
        self.credentials = credentials
        self.quota_project = quota_project or getattr(credentials, "quota_project_id", None)
        self._lock = threading.Lock()

    def _refresh(self, force: bool = False) -> None:
        import google.auth.transport.requests
        from google.auth import exceptions as auth_exceptions

        with self._lock:
            if force or not self.credentials.valid:
                try:
                    self.credentials.refresh(google.auth.transport.requests.Request())
                except auth_exceptions.GoogleAuthError as exc:
                    raise Unauthenticated(f"could not refresh Google credentials: {exc}") from None

    def _sign(self, request: httpx.Request) -> None:
        request.headers["Authorization"] = f"Bearer {self.credentials.token}"
        if self.quota_project:
            request.headers["x-goog-user-project"] = self.quota_project

    def sync_auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        self._refresh()
        self._sign(request)
        response = yield request
        if response.status_code == 401:
            self._refresh(force=True)
            self._sign(request)
            yield request

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        if not self.credentials.valid:
            await asyncio.to_thread(self._refresh)
        self._sign(request)
        response = yield request
        if response.status_code == 401:
            await asyncio.to_thread(self._refresh, True)
            self._sign(request)
            yield request
