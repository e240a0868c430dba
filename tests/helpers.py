"""Small builders shared by the tests."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"


def make_repo(tmp: Path, files: dict[str, str | bytes], base: str = "minimal") -> Path:
    """A copy of a fixture repo with files added or replaced."""
    root = tmp / "repo"
    shutil.copytree(FIXTURES / base, root)
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def cesync(
    *args: str, cwd: Path | None = None, env: dict[str, str | None] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The command line run in this process: click's CliRunner over ``cesync.cli.main``, its
    output and error streams captured apart, env set (a None value unsets) and cwd entered for
    the call only, as a new process would have them. What a process leaves behind is undone
    after: the working directory (each run's scrubber is its own and goes with it).

    A Python exception escaping the command is raised here (a subprocess would have printed a
    traceback), so "never a traceback" stays checked. Tests about the process itself (signals,
    the real entry point's exit codes, an environment no test may leak into) use cesync_process.
    """
    from click.testing import CliRunner

    from cesync.cli import main

    overrides: dict[str, str | None] = {"NO_COLOR": "1", "CES_EMULATOR_HOST": None, **(env or {})}
    before = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        result = CliRunner().invoke(main, list(args), input=stdin, env=overrides)
    finally:
        os.chdir(before)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(list(args), result.exit_code, result.stdout, result.stderr)


cesync_in_process = cesync  # the older name of the same helper


def spy_found(monkeypatch: Any, module: Any) -> list[bool]:
    """Whether each call of module.find (a cache's lookup of a whole entry) found one, call by call:
    which runs took the entry and which did the work again."""
    seen: list[bool] = []
    real = module.find

    def spy(*args: Any) -> Any:
        found = real(*args)
        seen.append(found is not None)
        return found

    monkeypatch.setattr(module, "find", spy)
    return seen


def cesync_process(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m cesync.cli`` in a new interpreter: for tests where the process boundary is the point."""
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    full_env.pop("CES_EMULATOR_HOST", None) if "CES_EMULATOR_HOST" not in (env or {}) else None
    return subprocess.run(
        [sys.executable, "-m", "cesync.cli", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
        input=stdin,
    )


def emulator_env(host: str) -> dict[str, str]:
    """The variables that send a command to the emulator at host even for an environment of Google's."""
    return {"CESYNC_ENDPOINT": "emulator", "CES_EMULATOR_HOST": host}


def official_client(url: str) -> Any:
    """Google's own google-cloud-ces client (REST), pointed at an emulator: the remote as Google's client reads it."""
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import ces_v1

    return ces_v1.AgentServiceClient(
        credentials=AnonymousCredentials(), transport="rest", client_options=ClientOptions(api_endpoint=url)
    )


def official_evaluation_client(url: str) -> Any:
    """Google's own v1beta EvaluationServiceClient (REST), pointed at an emulator: the evaluation kinds."""
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import ces_v1beta

    return ces_v1beta.EvaluationServiceClient(
        credentials=AnonymousCredentials(), transport="rest", client_options=ClientOptions(api_endpoint=url)
    )


def fast_polling() -> Any:
    """Google's polling of an operation (api_core's DEFAULT_POLLING) from 50 ms, not 1 s, for
    ``operation.result(polling=...)``: an emulator's operation is done within a fraction of a
    second, and the default's first wait of a second was most of these tests' time."""
    from google.api_core.future.polling import DEFAULT_POLLING

    return DEFAULT_POLLING.with_delay(initial=0.05, maximum=0.5)


@contextlib.contextmanager
def json_api(answer: Callable[[str, Mapping[str, str]], tuple[int, Any]]) -> Iterator[str]:
    """A loopback HTTP server whose GETs answer JSON: answer(path, headers) -> (status, data);
    yields its URL. It polls for shutdown every 50 ms (the default 0.5 s was a wait per test)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, data = answer(self.path, self.headers)
            body = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


MERMAID_CHECKER = Path(__file__).parent / "render" / "mermaid"
_mermaid: list[subprocess.Popen[str]] = []


def need_tool(found: bool, what: str) -> None:
    """Skip without a tool a test needs, except in CI (CI=true), where .ci/run installs it."""
    import pytest

    if not found:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{what} is missing: .ci/run installs it")
        pytest.skip(f"{what} is not installed")


def mermaid_parse(texts: list[str]) -> list[dict[str, Any]]:
    """Each text as Mermaid's own parser reads it ({ok, type, nodes, edges} or {ok, error}).

    One node process per test process serves every call (tests/render/mermaid/check.mjs): a
    start costs a second and a half, a diagram a millisecond, so hypothesis can shrink."""
    need_tool(
        shutil.which("node") is not None and (MERMAID_CHECKER / "node_modules" / "mermaid").is_dir(),
        "Mermaid's parser (npm ci --prefix tests/render/mermaid)",
    )
    if not _mermaid or _mermaid[0].poll() is not None:
        _mermaid[:] = [
            subprocess.Popen(
                ["node", str(MERMAID_CHECKER / "check.mjs")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )
        ]
    proc = _mermaid[0]
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(texts) + "\n")
    proc.stdin.flush()
    results: list[dict[str, Any]] = json.loads(proc.stdout.readline())
    return results
