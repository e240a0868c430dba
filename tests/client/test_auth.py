"""client/auth.py against a fake token endpoint: refresh, 401, quota project, impersonation, trusted hosts."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from cesync.client.auth import TRUSTED_HOSTS_VAR, GoogleAuth, check_trusted, default_credentials, is_trusted
from cesync.errors import CesyncError, Unauthenticated
from tests.google_fake import QUOTA_PROJECT, TARGET, FakeGoogle, Server, service_account_file
from tests.helpers import cesync_process as cesync  # credentials from the environment: a process that has only these
from tests.helpers import make_repo
from tests.smoke_google import run as smoke

API = "https://ces.googleapis.com"


@pytest.fixture
def google(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeGoogle, Server]]:
    fake = FakeGoogle()
    with Server(fake) as server:
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(service_account_file(tmp_path, f"{server.url}/token")))
        for name in ("GOOGLE_CLOUD_QUOTA_PROJECT", TRUSTED_HOSTS_VAR, "CES_EMULATOR_HOST"):
            monkeypatch.delenv(name, raising=False)
        yield fake, server


def recorder(statuses: list[int]) -> tuple[httpx.MockTransport, list[dict[str, str]]]:
    """The CES side: answers the given statuses in order (then 200) and keeps the headers of every request."""
    seen: list[dict[str, str]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(dict(request.headers))  # a copy: a resent request is the same object, signed again
        return httpx.Response(statuses.pop(0) if statuses else 200, json={})

    return httpx.MockTransport(handle), seen


def get_sync(auth: GoogleAuth, transport: httpx.MockTransport) -> int:
    with httpx.Client(auth=auth, transport=transport) as client:
        return client.get(f"{API}/v1/x").status_code


def get_async(auth: GoogleAuth, transport: httpx.MockTransport) -> int:
    async def go() -> int:
        async with httpx.AsyncClient(auth=auth, transport=transport) as client:
            return (await client.get(f"{API}/v1/x")).status_code

    return asyncio.run(go())


FLOWS: list[Callable[[GoogleAuth, httpx.MockTransport], int]] = [get_sync, get_async]


def test_concurrent_requests_refresh_once_under_the_lock(google: tuple[FakeGoogle, Server]) -> None:
    fake, _ = google
    fake.token_delay = 0.3  # every request finds the token missing while the first refresh runs
    auth = GoogleAuth(default_credentials())
    transport, seen = recorder([])

    async def many() -> list[int]:
        async with httpx.AsyncClient(auth=auth, transport=transport) as client:
            return [r.status_code for r in await asyncio.gather(*(client.get(f"{API}/v1/{i}") for i in range(12)))]

    assert asyncio.run(many()) == [200] * 12
    with ThreadPoolExecutor(6) as pool:  # the sync flow shares the same lock and token
        assert list(pool.map(lambda _: get_sync(auth, transport), range(6))) == [200] * 6
    assert fake.tokens == ["tok-1"] and auth.refreshes == 1
    assert {r["authorization"] for r in seen} == {"Bearer tok-1"}


@pytest.mark.parametrize("flow", FLOWS, ids=lambda f: f.__name__)
def test_401_refreshes_once_and_resends(google: tuple[FakeGoogle, Server], flow: Callable[..., int]) -> None:
    fake, _ = google
    auth = GoogleAuth(default_credentials())
    transport, seen = recorder([401])
    assert flow(auth, transport) == 200
    assert fake.tokens == ["tok-1", "tok-2"]
    assert [r["authorization"] for r in seen] == ["Bearer tok-1", "Bearer tok-2"]
    transport, seen = recorder([401, 401])  # still refused: the 401 is the answer, no loop
    assert flow(auth, transport) == 401
    assert len(seen) == 2 and fake.tokens == ["tok-1", "tok-2", "tok-3"]


@pytest.mark.parametrize(
    ("env_quota", "yaml_quota", "expected"),
    [
        (None, None, None),
        (QUOTA_PROJECT, None, QUOTA_PROJECT),
        (None, "from-yaml", "from-yaml"),
        ("env", "from-yaml", "from-yaml"),
    ],
)
@pytest.mark.parametrize("impersonate", [None, TARGET])
def test_quota_project_survives_impersonation(
    google: tuple[FakeGoogle, Server],
    monkeypatch: pytest.MonkeyPatch,
    env_quota: str | None,
    yaml_quota: str | None,
    expected: str | None,
    impersonate: str | None,
) -> None:
    fake, server = google
    from google.auth import iam

    monkeypatch.setattr(iam, "_IAM_ENDPOINT", f"{server.url}/v1/projects/-/serviceAccounts/{{}}:generateAccessToken")
    if env_quota:
        monkeypatch.setenv("GOOGLE_CLOUD_QUOTA_PROJECT", env_quota)
    auth = GoogleAuth(default_credentials(impersonate, yaml_quota), yaml_quota)
    transport, seen = recorder([])
    assert get_async(auth, transport) == 200
    assert seen[0].get("x-goog-user-project") == expected
    # impersonation: the source's token buys the target's token, which is what CES sees
    assert seen[0]["authorization"] == ("Bearer imp-1" if impersonate else "Bearer tok-1")
    assert fake.impersonations == (["imp-1"] if impersonate else [])


def test_refresh_failure_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(service_account_file(tmp_path, f"http://127.0.0.1:{port}/token")))
    transport, seen = recorder([])
    with pytest.raises(Unauthenticated, match="could not refresh Google credentials"):
        get_sync(GoogleAuth(default_credentials()), transport)
    assert seen == []


@pytest.mark.parametrize(
    ("url", "trusted_env", "trusted"),
    [
        ("https://ces.googleapis.com", "", True),
        ("https://ces.us.rep.googleapis.com:443", "", True),
        ("https://googleapis.com", "", True),
        ("https://CES.GoogleApis.com.", "", True),
        ("http://ces.googleapis.com", "", False),  # never in clear text
        ("https://ces.googleapis.com.evil.example", "", False),
        ("https://evilgoogleapis.com", "", False),
        ("https://googleapis.com@evil.example", "", False),
        ("https://user@ces.googleapis.com", "", False),
        ("https://proxy.corp.example", "", False),
        ("https://proxy.corp.example", "other.example, proxy.corp.example", True),
        ("https://proxy.corp.example:8443", "proxy.corp.example:8443", True),
        ("https://proxy.corp.example:9443", "proxy.corp.example:8443", False),
        ("https://sub.proxy.corp.example", "proxy.corp.example", False),  # exact hosts, no suffixes
        ("http://proxy.corp.example", "proxy.corp.example", False),
    ],
)
def test_trusted_hosts(monkeypatch: pytest.MonkeyPatch, url: str, trusted_env: str, trusted: bool) -> None:
    monkeypatch.setenv(TRUSTED_HOSTS_VAR, trusted_env)
    assert is_trusted(url) is trusted
    if not trusted:
        with pytest.raises(CesyncError, match=TRUSTED_HOSTS_VAR):
            check_trusted(url)


def test_auth_never_signs_a_request_to_an_untrusted_host(google: tuple[FakeGoogle, Server]) -> None:
    fake, _ = google
    transport, seen = recorder([])
    with httpx.Client(auth=GoogleAuth(default_credentials()), transport=transport) as client, pytest.raises(CesyncError):
        client.get("https://evil.example/v1/x")  # e.g. a redirect or an absolute URL
    assert seen == [] and fake.tokens == []


@pytest.mark.parametrize("how", ["cesync.yaml", "--endpoint"])
def test_untrusted_endpoint_opens_no_connection(tmp_path: Path, how: str) -> None:
    """A PR sets endpoint: https://attacker; with a service-account key present, nothing connects anywhere."""
    with socket.socket() as api, socket.socket() as token_endpoint:
        for s in (api, token_endpoint):
            s.bind(("127.0.0.1", 0))
            s.listen()
            s.settimeout(0.3)
        url = f"https://127.0.0.1:{api.getsockname()[1]}"
        key = service_account_file(tmp_path, f"http://127.0.0.1:{token_endpoint.getsockname()[1]}/token")
        env_line = f"    endpoint: {url}\n" if how == "cesync.yaml" else ""
        config = f"version: 1\nenvironments:\n  prod:\n{env_line}    project: p\n    location: us\n    app: a\n"
        repo = make_repo(tmp_path, {"cesync.yaml": config})
        extra = ["--endpoint", url] if how == "--endpoint" else []
        result = cesync(
            "plan", "--dir", str(repo), *extra, env={"GOOGLE_APPLICATION_CREDENTIALS": str(key), TRUSTED_HOSTS_VAR: ""}
        )
        for s in (api, token_endpoint):
            with pytest.raises(TimeoutError):
                s.accept()
    assert result.returncode == 1, result.stderr
    assert "127.0.0.1" in result.stderr and TRUSTED_HOSTS_VAR in result.stderr and "Traceback" not in result.stderr


def test_plain_install_smoke(tmp_path: Path) -> None:
    """The script .ci/run also runs from a virtualenv without extras."""
    fake = smoke(tmp_path)
    assert len(fake.api_calls) >= 2
