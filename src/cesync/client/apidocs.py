"""Google's discovery document for CES, fetched from the live service: only from Google's hosts.

``https://ces.googleapis.com/$discovery/rest?version=v1`` (and ``v1beta``) describes the API as the
service has it today: cesync reads it when a repo uses a field or enum value newer than the
description it ships (cesync.repo.apidescription). The request follows the client's rules for
credentials: https to a host under googleapis.com (or one the process lists in
CESYNC_TRUSTED_HOSTS), Application Default Credentials when there are some (the document is
public, so none is fine too), no redirects, no cookies. The answer is data: bounded in size,
parsed as JSON, and taken only if it is CES's discovery document of that version.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx

from ..api.descriptors import is_revision
from ..errors import CesyncError, Unauthenticated
from .auth import GoogleAuth, default_credentials, is_trusted

__all__ = ["DISCOVERY_URL", "MAX_BYTES", "fetch_discovery"]

DISCOVERY_URL = "https://ces.googleapis.com/$discovery/rest?version={version}"
MAX_BYTES = 16 * 1024 * 1024  # ces.v1beta.json of revision 20261016 is 0.6 MB


def fetch_discovery(
    version: str,
    *,
    url: str | None = None,
    allowed: Callable[[str], bool] = is_trusted,
    credentials: Any = None,
    timeout: float = 10.0,
) -> dict[str, Any]:
    """The live discovery document of CES ``version``; CesyncError saying why when there is none.

    ``allowed`` decides which URLs may be asked (tests serve a document on loopback with their
    own check); ``credentials`` None means Application Default Credentials if any.
    """
    where = url or DISCOVERY_URL.format(version=version)
    if not allowed(where):
        raise CesyncError(f"refusing to fetch CES's discovery document from {where}: cesync asks only Google's hosts (https)")
    auth = None
    if credentials is None and allowed is is_trusted:
        try:
            credentials = default_credentials()
        except Unauthenticated:
            credentials = None  # the document is public: asked without a token
    if credentials is not None:
        auth = GoogleAuth(credentials)
    try:
        with (
            httpx.Client(timeout=timeout, follow_redirects=False, auth=auth, trust_env=False) as client,
            client.stream("GET", where, headers={"Accept": "application/json"}) as response,
        ):
            if response.status_code != 200:
                raise CesyncError(f"{where} answered HTTP {response.status_code}")
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > MAX_BYTES:
                    raise CesyncError(f"{where} sent more than {MAX_BYTES // (1024 * 1024)} MB; not a discovery document")
                chunks.append(chunk)
    except httpx.HTTPError as exc:
        raise CesyncError(f"cannot reach {where}: {type(exc).__name__}") from None
    try:
        document = json.loads(b"".join(chunks))
    except (ValueError, RecursionError):
        raise CesyncError(f"{where} did not answer JSON") from None
    if not isinstance(document, dict) or document.get("name") != "ces" or document.get("version") != version:
        raise CesyncError(f"{where} did not answer CES's discovery document for {version}")
    if not is_revision(document.get("revision")) or not isinstance(document.get("schemas"), dict):
        raise CesyncError(f"{where} answered a discovery document without a revision or schemas")
    return document
