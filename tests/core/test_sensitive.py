"""Sensitive variables: a generated secret never appears in any output channel.

Channels: plan text, markdown and JSON, the saved plan file, show, apply output (text
and JSON), export's files and output, pull's diff and messages, the comment body the fake forge receives, error messages (a server that
echoes the request body in a 400) and log records. A rotation is still an update, and
a saved plan whose value no longer matches is refused before any write.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.cli import main
from cesync.core.planbuild import build_plan
from cesync.core.sensitive import CHANGED, MASK
from cesync.emulator.server import BackgroundServer
from cesync.emulator.store import Store
from cesync.render import render
from tests.fake_forge import TOKEN, serve
from tests.helpers import FIXTURES, cesync

CONFIG = """version: 1
defaults:
  sensitive: [API_KEY]
environments:
  local:
    endpoint: embedded
    project: p
    location: us
    app: a
"""
TOOL = """openApiToolset:
  url: https://orders.example/v1?key=${API_KEY}
  openApiSchema: |
    openapi: 3.0.0
    info: {title: orders, version: "1"}
    servers: [{url: $env_var}]
    paths:
      /orders: {get: {operationId: list_orders, responses: {"200": {description: ok}}}}
"""
NOTE = """clientFunction:
  name: note
  description: "token ${API_KEY} and more"
"""

# Secrets as they come: random text with YAML, JSON, regex and shell specials in it.
SPECIALS = ["${X}", "$$", "{{a}}", ".*+?[](){}|^\\", ": - #&*!%@`", "\"'", "\\n\\u0041", "\n", "é€😀", "</details>", "```"]
secret = st.builds(
    lambda core, special: f"sk-{core}{special}",
    st.text(st.characters(min_codepoint=32, max_codepoint=0x2FFF, exclude_categories=("Cs",)), min_size=6, max_size=24),
    st.sampled_from(SPECIALS),
)


def _repo(tmp: Path) -> Path:
    root = tmp / "repo"
    shutil.copytree(FIXTURES / "minimal", root)
    (root / "cesync.yaml").write_text(CONFIG)
    (root / "toolsets").mkdir()
    (root / "toolsets" / "orders.yaml").write_text(TOOL)
    (root / "tools" / "note.yaml").write_text(NOTE)
    return root


class Runner:
    """The CLI in process (fast enough for generated cases); every output and log kept."""

    def __init__(self, root: Path, caplog: pytest.LogCaptureFixture) -> None:
        self.root = root
        self.caplog = caplog
        self.seen: list[str] = []

    def __call__(self, *args: str, env: dict[str, str], code: int | None = 0) -> str:
        result = CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)
        text = result.stdout + result.stderr
        self.seen.append(text)
        if code is not None:
            assert result.exit_code == code, text
        return text


@pytest.fixture
def forge() -> Iterator[Any]:
    fake, server = serve()
    yield fake
    server.shutdown()


@pytest.mark.slow  # every command of the product, run
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(old=secret, new=secret)
def test_secret_never_appears_in_any_channel(old: str, new: str, forge: Any, caplog: pytest.LogCaptureFixture) -> None:
    if old == new:
        new += "-rotated"
    caplog.set_level(logging.DEBUG)
    with tempfile.TemporaryDirectory() as tmp:
        root = _repo(Path(tmp))
        run = Runner(root, caplog)
        d = ["--dir", str(root), "--env", "local"]
        env = {"CESYNC_VAR_API_KEY": old, "NO_COLOR": "1"}
        for fmt in ("text", "markdown", "json"):
            run("plan", *d, "--format", fmt, env=env)
        run("apply", *d, "--auto-approve", env=env)
        run("apply", *d, "--auto-approve", "--format", "json", env=env)  # nothing to do: still an output
        exported = Path(tmp) / "exported"
        run("export", *d, "--out", str(exported), env=env)  # the app's value goes back as ${API_KEY}
        files = [p.read_text() for p in exported.rglob("*") if p.is_file() and ".cesync" not in p.parts]
        assert "${API_KEY}" in "".join(files)
        run("pull", *d, "--dry-run", env=env)  # nothing differs: still an output
        env = {"CESYNC_VAR_API_KEY": new, "NO_COLOR": "1"}
        for extra in ((), ("--inline",)):  # the app still holds the old value: pull names the variable only
            pulled = run("pull", *d, "--dry-run", *extra, env=env, code=1)
            assert "API_KEY is a sensitive variable" in pulled
        planfile = Path(tmp) / "plan.json"
        rotated = run("plan", *d, "--out", str(planfile), env=env)
        assert "will be updated in place" in rotated and CHANGED in rotated  # a rotation is still an update
        plan_data = json.loads(planfile.read_text())
        assert {c["action"] for c in plan_data["changes"]} == {"update"}
        assert MASK in json.dumps(plan_data)
        for fmt in ("text", "markdown", "json"):
            run("show", str(planfile), "--format", fmt, env={})
        forge_env = {"GITHUB_API_URL": forge.url, "GITHUB_REPOSITORY": "o/r", "GITHUB_TOKEN": TOKEN}
        run("comment", str(planfile), "--provider", "github", "--pr", "7", env=forge_env)
        run("apply", str(planfile), *d, "--auto-approve", "--format", "json", env=env)
        seen = [*run.seen, *files, planfile.read_text(), caplog.text, *(c["body"] for t in forge.comments.values() for c in t)]
        store = Store(root / ".cesync" / "local.sqlite")  # the emulator's state is SQLite: read it as JSON
        state = json.dumps(store.snapshot())
        store.close()
    assert new in state or json.dumps(new)[1:-1] in state  # the value did reach the app
    for value in (old, new):
        for text in seen:
            assert value not in text
            assert json.dumps(value)[1:-1] not in text


def test_log_records_are_scrubbed(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """open_context tells the run's scrubber the environment's values; the CLI's log handler,
    bound to that scrubber, scrubs a library's record (no global record factory)."""
    from cesync.cli.logs import configure_logging
    from cesync.core.scrubber import Scrubber
    from cesync.pipeline.context import open_context

    root = _repo(tmp_path)
    os.environ["CESYNC_VAR_API_KEY"] = "sk-logged-value-123"
    run = Scrubber()
    try:
        open_context(root, "local", scrubber=run)
        configure_logging(2, run)
        logging.getLogger("httpx").debug("request body %s", {"url": "x?key=sk-logged-value-123"})
        logged = capsys.readouterr().err
        assert "sk-logged-value-123" not in logged and MASK in logged
    finally:
        del os.environ["CESYNC_VAR_API_KEY"]
        configure_logging(0, Scrubber())
        logging.getLogger().setLevel(logging.WARNING)


# --- a server that echoes the request body in its 400 -------------------------------------------


def _echo_proxy(upstream: str) -> tuple[str, ThreadingHTTPServer, list[str]]:
    """Reads pass through to the emulator; every write is answered 400 with the body echoed."""
    writes: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            reply = httpx.get(upstream + self.path)
            self._send(reply.status_code, reply.content)

        def _write(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
            writes.append(raw)
            error = {"code": 400, "status": "INVALID_ARGUMENT", "message": f"Invalid JSON payload received: {raw}"}
            self._send(400, json.dumps({"error": error}).encode())

        do_POST = do_PATCH = do_DELETE = _write

        def log_message(self, *args: object) -> None:
            pass

    class Listener(ThreadingHTTPServer):
        request_queue_size = 128  # not socketserver's 5: a plan's reads come at once, and a dropped SYN is resent a second later

    server = Listener(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()  # shutdown() waits a poll
    return f"127.0.0.1:{server.server_address[1]}", server, writes


def test_error_message_echoing_the_body_is_scrubbed(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    value = 'sk-echo"{value}\\n$1'
    with BackgroundServer(auto_create_apps=True) as emu:
        host, proxy, writes = _echo_proxy(emu.url)
        try:
            for fmt in ("text", "json"):
                result = cesync(
                    "apply", "--dir", str(root), "--env", "local", "--auto-approve", "--format", fmt,
                    env={"CESYNC_VAR_API_KEY": value, "CES_EMULATOR_HOST": host},
                )  # fmt: skip
                assert result.returncode == 1 and "Invalid JSON payload received" in result.stdout + result.stderr
                for text in (result.stdout, result.stderr):
                    assert value not in text and json.dumps(value)[1:-1] not in text and "Traceback" not in text
        finally:
            proxy.shutdown()
    assert any(json.dumps(value)[1:-1] in w for w in writes)  # the server really echoed it


def test_saved_plan_with_another_value_is_refused_before_any_write(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    planfile = tmp_path / "plan.json"
    with BackgroundServer(auto_create_apps=True) as emu:
        env = {"CES_EMULATOR_HOST": emu.host}
        made = cesync(
            "plan", "--dir", str(root), "--env", "local", "--out", str(planfile), env={**env, "CESYNC_VAR_API_KEY": "sk-one-1234"}
        )
        assert made.returncode == 0, made.stderr
        saved = planfile.read_text()
        assert "sk-one-1234" not in saved and '"API_KEY": "hmac-sha256:' in saved
        for apply_env, message in (
            ({"CESYNC_VAR_API_KEY": "sk-two-5678"}, "sensitive variable API_KEY has another value"),
            ({"CESYNC_VAR_API_KEY": "sk-one-1234", "CESYNC_PLAN_KEY": "k"}, "CESYNC_PLAN_KEY differs"),
            ({}, "variable 'API_KEY' is not set"),
        ):
            result = cesync("apply", str(planfile), "--dir", str(root), "--auto-approve", env={**env, **apply_env})
            assert result.returncode == 1 and message in result.stderr, result.stderr
        state = httpx.get(f"{emu.url}/admin/state").json()
        assert "orders" not in json.dumps(state)  # the emulator saw no write
        ok = cesync(
            "apply", str(planfile), "--dir", str(root), "--auto-approve", env={**env, "CESYNC_VAR_API_KEY": "sk-one-1234"}
        )
        assert ok.returncode == 0, ok.stderr
        assert "sk-one-1234" in json.dumps(httpx.get(f"{emu.url}/admin/state").json())  # the real value was applied


def test_plan_key_from_the_environment(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    planfile = tmp_path / "plan.json"
    env = {"CESYNC_VAR_API_KEY": "sk-keyed-1234", "CESYNC_PLAN_KEY": "ci-secret"}
    assert cesync("plan", "--dir", str(root), "--env", "local", "--out", str(planfile), env=env).returncode == 0
    sealed = json.loads(planfile.read_text())["sensitive"]
    assert sealed["key"] == "CESYNC_PLAN_KEY" and len(sealed["salt"]) == 32
    result = cesync("apply", str(planfile), "--dir", str(root), "--auto-approve", env=env)
    assert result.returncode == 0, result.stderr


# --- the pure renderers, many generated values --------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(before=secret, after=secret)
def test_renderers_mask_both_sides(before: str, after: str) -> None:
    parent = "projects/p/locations/us/apps/a"
    body = {"clientFunction": {"name": "n", "description": after}, "displayName": "x"}
    remote = [
        Resource(
            KINDS["tool"], "t", {"clientFunction": {"name": "n", "description": before}, "name": f"{parent}/tools/t", "etag": "e"}
        )
    ]
    hidden = {("tool", "t"): [("clientFunction", "description")]}
    plan = build_plan("local", parent, [Resource(KINDS["tool"], "t", body)], remote, sensitive=hidden)
    assert plan.counts()["update"] == int(before != after)  # a rotation is an update
    for fmt in ("text", "markdown", "json"):
        text = render(plan, fmt)
        for value in (before, after):
            assert value not in text and json.dumps(value)[1:-1] not in text
    if before != after:
        assert CHANGED in render(plan, "text")


@given(before=st.text(".", max_size=200), limit=st.integers(8, 160))
def test_a_cut_message_keeps_no_part_of_a_sensitive_value(before: str, limit: int) -> None:
    """Issue #34 finding 8: a message cut to its length ('...') could end with the first characters
    of a value the final scrub then no longer recognised (messages quote a server's or tool's text)."""
    from cesync.core.scrubber import Scrubber, clip

    value = "Zq9Wx7Kv3Lp2Mn8Rt4"
    cut = clip(repr(before + value + " and more"), limit)  # pure: it knows no value
    assert len(cut) <= limit
    shown = Scrubber([value]).scrub(f"error: the server said {cut}, expected more")  # what a channel prints
    assert not any(value[:k] in shown for k in range(2, len(value) + 1)), shown
