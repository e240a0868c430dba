"""--verbose and CESYNC_LOG: each HTTP call and planning decision on standard error, scrubbed;
the emulator's one line per request."""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path

import httpx
import pytest

from cesync.cli import configure_logging
from cesync.core.sensitive import forget, remember
from cesync.emulator import Store, create_app
from cesync.emulator.server import RequestLog
from tests.helpers import cesync_in_process, make_repo

CALL = re.compile(r"DEBUG cesync\.client\.api: GET projects/p/locations/us/apps/a(/\w+)? -> \d{3} in \d+ ms")


@pytest.mark.parametrize("where", ["after", "before"], ids=["plan -v", "-v plan"])
def test_verbose_shows_each_call_and_decision(tmp_path: Path, where: str) -> None:
    root = make_repo(tmp_path, {})
    args = ["plan", "--dir", str(root), "--env", "local"]
    r = cesync_in_process(*(["-v", *args] if where == "before" else [*args, "--verbose"]))
    assert r.returncode == 0, r.stderr
    calls = [line for line in r.stderr.splitlines() if CALL.search(line)]
    assert len(calls) >= 7  # the app and each collection
    assert "cesync.core.plan: plan: tool greet: create (not in the app)" in r.stderr
    assert "Plan for environment" in r.stdout and "DEBUG" not in r.stdout  # logs never mix into the output


def test_quiet_by_default_and_cesync_log_turns_it_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_repo(tmp_path, {})
    assert "DEBUG" not in cesync_in_process("plan", "--dir", str(root), "--env", "local").stderr
    monkeypatch.setenv("CESYNC_LOG", "debug")
    assert CALL.search(cesync_in_process("plan", "--dir", str(root), "--env", "local").stderr)
    monkeypatch.setenv("CESYNC_LOG", "loud")
    r = cesync_in_process("validate", "--dir", str(root))
    assert r.returncode == 0 and "CESYNC_LOG='loud' is not one of debug, info, warning, error" in r.stderr


def test_log_lines_are_scrubbed_traceback_included(capsys: pytest.CaptureFixture[str]) -> None:
    secret = "tok-9f8e7d6c5b4a"
    remember([secret])
    try:
        configure_logging(1)
        log = logging.getLogger("cesync.test")
        log.debug("sending %s", secret)
        try:
            raise ValueError(f"bad {secret}")
        except ValueError:
            log.exception("failed")
        logged = capsys.readouterr().err
        assert "sending (sensitive)" in logged and "ValueError: bad (sensitive)" in logged
        assert secret not in logged
    finally:
        configure_logging(0)
        forget()
    logging.getLogger("cesync.test").debug("not shown")
    assert "not shown" not in capsys.readouterr().err


def test_the_emulator_logs_one_line_per_request(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("cesync.emulator.test")
    app = RequestLog(create_app(Store(None)), logger)

    async def calls() -> None:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://emulator") as client:
            await client.get("/v1/projects/p/locations/us/apps/a/tools", params={"pageSize": 5})
            await client.post("/v1/projects/p/locations/us/apps", params={"appId": "a"}, json={"displayName": "secret body"})

    with caplog.at_level(logging.INFO, logger=logger.name):
        asyncio.run(calls())
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert re.fullmatch(r"GET /v1/projects/p/locations/us/apps/a/tools\?pageSize=5 -> 404 in \d+ ms", lines[0])
    assert lines[1].startswith("POST /v1/projects/p/locations/us/apps?appId=a -> 200") and "secret body" not in lines[1]
