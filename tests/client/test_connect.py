"""client/connect.py: which endpoint, and who gets credentials (in process; the CLI tests run it end to end)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from cesync.client.auth import TRUSTED_HOSTS_VAR, GoogleAuth
from cesync.client.connect import connect, endpoint_for
from cesync.core.scrubber import Scrubber
from cesync.errors import CesyncError
from cesync.repo.repo import EnvTarget
from tests.google_fake import service_account_file


def target(endpoint: str | None = None, location: str = "us", quota: str | None = None) -> EnvTarget:
    return EnvTarget("prod", "p", location, "a", endpoint, {}, {}, False, None, quota)


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CES_EMULATOR_HOST", TRUSTED_HOSTS_VAR, "GOOGLE_CLOUD_QUOTA_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(service_account_file(tmp_path, "http://127.0.0.1:9/token")))


@pytest.mark.parametrize(
    ("env", "override", "emulator_host", "expected"),
    [
        (target(), None, None, "https://ces.us.rep.googleapis.com"),
        (target(location="global"), None, None, "https://ces.googleapis.com"),
        (target("http://127.0.0.1:1"), None, None, "http://127.0.0.1:1"),
        (target("http://127.0.0.1:1"), "127.0.0.1:2", None, "http://127.0.0.1:2"),  # the emulator's printed form
        (target("http://127.0.0.1:1"), None, "emulator:8765", "http://emulator:8765"),  # CES_EMULATOR_HOST: any host
        (target(), "embedded", "emulator:8765", "embedded"),
    ],
)
def test_endpoint_order(
    monkeypatch: pytest.MonkeyPatch, env: EnvTarget, override: str | None, emulator_host: str | None, expected: str
) -> None:
    if emulator_host:
        monkeypatch.setenv("CES_EMULATOR_HOST", emulator_host)
    assert endpoint_for(env, override) == expected


def test_bad_override_names_the_option() -> None:
    with pytest.raises(CesyncError, match=r"--endpoint: endpoint 'emulator:8765' has no scheme"):
        endpoint_for(target(), "emulator:8765")


def _auth(env: EnvTarget, tmp_path: Path) -> object:
    client = connect(env, tmp_path, scrubber=Scrubber())
    try:
        return client.http.auth
    finally:
        asyncio.run(client.aclose())


def test_google_gets_credentials_with_the_quota_project(tmp_path: Path) -> None:
    auth = _auth(target(quota="billing"), tmp_path)
    assert isinstance(auth, GoogleAuth) and auth.quota_project == "billing"


def test_emulators_get_none(tmp_path: Path) -> None:
    assert not isinstance(_auth(target("http://127.0.0.1:1"), tmp_path), GoogleAuth)


def test_untrusted_https_is_refused_unless_the_process_trusts_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(CesyncError, match=r"ces\.corp\.example.*CESYNC_TRUSTED_HOSTS"):
        connect(target("https://ces.corp.example"), tmp_path, scrubber=Scrubber())
    monkeypatch.setenv(TRUSTED_HOSTS_VAR, "ces.corp.example")
    assert isinstance(_auth(target("https://ces.corp.example"), tmp_path), GoogleAuth)


def test_the_embedded_emulator_has_no_app_until_it_is_created(tmp_path: Path) -> None:
    """As in CES: the embedded environment's app is made by CreateApp (cesync apply), never on first use."""
    from cesync.client.apps import create_app, get_app

    env = EnvTarget("local", "p", "us", "a", "embedded", {}, {}, False, None, None)
    parent = "projects/p/locations/us/apps/a"

    async def run() -> tuple[object, object, object]:
        async with connect(env, tmp_path, scrubber=Scrubber()) as client:
            before = await get_app(client, parent)
            created = await create_app(client, parent, {"displayName": "A"})
            return before, created.error, await get_app(client, parent)

    before, error, after = asyncio.run(run())
    assert before is None and error is None
    assert isinstance(after, dict) and after["displayName"] == "A"


@pytest.mark.parametrize(
    ("endpoint", "told", "expected"),
    [
        (None, None, (600, 600)),  # Google: CES's documented defaults
        ("http://127.0.0.1:1", None, (None, None)),  # an emulator: none
        ("embedded", None, (None, None)),
        (None, {"writesPerMinute": 1200}, (1200, 600)),  # what is told wins, the rest defaults
        ("http://127.0.0.1:1", {"readsPerMinute": 60}, (None, 60)),
        (None, {"writesPerMinute": 0, "readsPerMinute": 0}, (0, 0)),  # 0: not paced, adapts to refusals
    ],
)
def test_the_quota_paced_to(
    tmp_path: Path, endpoint: str | None, told: dict[str, int] | None, expected: tuple[object, object]
) -> None:
    """cesync.yaml's quota:, through defaults and the environment, to the client's pacers."""
    from cesync.core.yamlfile import Document, load_text
    from cesync.repo.config import Config
    from cesync.repo.environments import resolve_env

    env_fields: dict[str, object] = {"app": "a", **({"endpoint": endpoint} if endpoint else {})}
    config = Config.model_validate(
        {
            "defaults": {"project": "p", "location": "us", **({"quota": told} if told else {})},
            "environments": {"prod": env_fields},
        }
    )
    doc = load_text("version: 1\n", "cesync.yaml")
    assert isinstance(doc, Document)
    env = resolve_env(config, doc, "prod", {})
    client = connect(env, tmp_path, scrubber=Scrubber())
    try:
        assert (client.quota.writes_per_minute, client.quota.reads_per_minute) == expected
        assert client.writes.ceiling == (expected[0] / 60 if expected[0] else None)
    finally:
        asyncio.run(client.aclose())


@pytest.mark.parametrize("env", [target(), target(location="global"), target("https://ces.us.rep.googleapis.com")])
def test_the_emulator_variable_never_redirects_an_environment_of_the_api(monkeypatch: pytest.MonkeyPatch, env: EnvTarget) -> None:
    """An exported CES_EMULATOR_HOST left from a local session: plan --env prod is an error, not a plan of the emulator."""
    monkeypatch.setenv("CES_EMULATOR_HOST", "127.0.0.1:8765")
    with pytest.raises(
        CesyncError, match=r"CES_EMULATOR_HOST is set \(127\.0\.0\.1:8765\) but environment 'prod' points at"
    ) as exc:
        endpoint_for(env)
    assert "https://ces." in str(exc.value) and "--endpoint emulator" in str(exc.value)
    assert endpoint_for(env, "emulator") == "http://127.0.0.1:8765"  # said on the command line: the emulator
    assert endpoint_for(env, "https://ces.eu.rep.googleapis.com") == "https://ces.eu.rep.googleapis.com"


def test_endpoint_emulator_in_the_environment_reads_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(CesyncError, match=r"environment 'prod' \(endpoint: emulator\) needs CES_EMULATOR_HOST"):
        endpoint_for(target("emulator"))
    with pytest.raises(CesyncError, match=r"--endpoint emulator needs CES_EMULATOR_HOST"):
        endpoint_for(target(), "emulator")
    monkeypatch.setenv("CES_EMULATOR_HOST", "127.0.0.1:9")
    assert endpoint_for(target("emulator")) == "http://127.0.0.1:9"


def test_an_https_override_with_the_variable_set_still_gets_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the endpoint the variable named is treated as an emulator (anonymous), not every endpoint while it is set."""
    monkeypatch.setenv("CES_EMULATOR_HOST", "127.0.0.1:9")
    client = connect(target(), tmp_path, override="https://ces.us.rep.googleapis.com", scrubber=Scrubber())
    try:
        assert isinstance(client.http.auth, GoogleAuth)
    finally:
        asyncio.run(client.aclose())


@pytest.mark.parametrize(
    "planted",
    [".cesync", ".cesync/prod.sqlite", ".cesync/prod.sqlite-wal", ".cesync/prod.sqlite-shm", ".cesync/prod.json"],
)
def test_the_embedded_state_is_never_reached_through_a_planted_symlink(tmp_path: Path, planted: str) -> None:
    """A branch that commits a symlink where the embedded state lives would have SQLite create and
    write a file wherever the job may write: refused before anything is opened."""
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    repo.mkdir()
    elsewhere.mkdir()
    link = repo / planted
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(elsewhere if planted == ".cesync" else elsewhere / "target")  # dangling: SQLite would create it
    with pytest.raises(CesyncError, match="symlink or leads out of the repo"):
        connect(target("embedded"), repo, scrubber=Scrubber())
    assert not any(elsewhere.iterdir())
