"""The command line end to end: exit codes, messages, files. Runs cesync as a user would."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cesync.api.kinds import KINDS
from cesync.emulator.server import BackgroundServer, free_port
from tests.conftest import EXAMPLES, ROOT
from tests.helpers import FIXTURES, cesync, cesync_process, emulator_env, make_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    dst = tmp_path / "support-bot"
    shutil.copytree(EXAMPLES / "support-bot", dst, ignore=shutil.ignore_patterns(".cesync"))
    return dst


def test_validate_example_and_broken_copy(repo: Path) -> None:
    ok = cesync("validate", "--dir", str(repo))
    assert ok.returncode == 0 and "23 files valid" in ok.stdout
    (repo / "tools" / "web-search.yaml").write_text("googleSearchTool:\n  nme: x\n")
    bad = cesync("validate", "--dir", str(repo))
    assert bad.returncode == 1
    assert "tools/web-search.yaml:2:3: unknown field 'nme' in GoogleSearchTool; did you mean 'name'?" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_schemas_are_current() -> None:
    result = cesync("schema", "--out", str(ROOT / "schemas"), "--check")
    assert result.returncode == 0, result.stderr


def test_init_then_validate_plan_apply(tmp_path: Path) -> None:
    assert cesync("init", "--dir", str(tmp_path)).returncode == 0
    assert cesync("init", "--dir", str(tmp_path)).returncode == 1  # never overwrites
    assert cesync("validate", "--dir", str(tmp_path)).returncode == 0
    plan = cesync("plan", "--dir", str(tmp_path), "--detailed-exitcode")
    assert plan.returncode == 2 and "+ tool greet will be created" in plan.stdout
    assert cesync("apply", "--dir", str(tmp_path), "--auto-approve").returncode == 0
    assert cesync("plan", "--dir", str(tmp_path), "--detailed-exitcode").returncode == 0


def test_saved_plan_apply_and_digest_guard(repo: Path) -> None:
    out = repo / "plan.json"
    plan = cesync("plan", "--dir", str(repo), "--env", "local", "--out", str(out), "--format", "json")
    assert plan.returncode == 0 and json.loads(plan.stdout)["environment"] == "local"
    md = cesync("show", str(out), "--format", "markdown")
    assert (
        "<!-- cesync-plan:local:projects/local/locations/us/apps/support-bot -->" in md.stdout
        and "| 23 | 0 | 0 | 0 |" in md.stdout  # the app included: the embedded emulator does not invent it
    )
    (repo / "tools" / "manuals.yaml").write_text((repo / "tools" / "manuals.yaml").read_text().replace("manuals.", "manuals!"))
    stale = cesync("apply", str(out), "--dir", str(repo), "--auto-approve")
    assert stale.returncode == 1 and "digest differs" in stale.stderr
    fresh = cesync("plan", "--dir", str(repo), "--env", "local", "--out", str(out), "--format", "json")
    assert fresh.returncode == 0
    applied = cesync("apply", str(out), "--dir", str(repo), "--auto-approve", "--format", "json")
    result = json.loads(applied.stdout)
    counts = result["counts"]
    assert applied.returncode == 0 and (counts["created"], counts["updated"]) == (23, 0)
    assert all(o["etag"] for o in result["outcomes"])


def test_apply_without_terminal_needs_auto_approve(repo: Path) -> None:
    result = cesync("apply", "--dir", str(repo), "--env", "local", stdin="")
    assert result.returncode == 1 and "--auto-approve" in result.stderr


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        ({"fail_status": "UNAUTHENTICATED"}, "UNAUTHENTICATED (401)"),
        (
            {"fail_status": "PERMISSION_DENIED"},
            re.compile(r"needs permission ces\.(apps\.get|(tools|toolsets|agents|guardrails|examples|deployments)\.list)"),
        ),  # the app and every list are read at once
    ],
    ids=["401", "403"],
)
def test_api_errors_are_one_clear_line(repo: Path, setup: dict[str, object], expected: str | re.Pattern[str]) -> None:
    import httpx

    with BackgroundServer() as server:
        if "autoCreateApps" in setup:
            httpx.post(f"{server.url}/admin/config", json=setup)
        else:
            httpx.post(f"{server.url}/admin/faults", json=setup)
        result = cesync("plan", "--dir", str(repo), "--env", "prod", env=emulator_env(server.host))
    found = expected.search(result.stderr) if isinstance(expected, re.Pattern) else expected in result.stderr
    assert result.returncode == 1 and found, result.stderr
    assert "Traceback" not in result.stderr


def test_unreachable_endpoint(repo: Path) -> None:
    port = free_port()
    result = cesync(
        "plan", "--dir", str(repo), "--env", "prod", env={**emulator_env(f"127.0.0.1:{port}"), "CESYNC_RETRY_ATTEMPTS": "2"}
    )
    assert result.returncode == 1 and "cannot reach" in result.stderr


def test_a_repo_problem_comes_before_and_without_the_app_read(repo: Path) -> None:
    """plan reads the app while it renders (pipeline.readahead.ReadAhead): a repo problem is still the only
    error, without the read's retry notices, and the pending read does not hold the exit back."""
    (repo / "tools" / "broken.yaml").write_text("clientFunction: {name: x\n")
    env = {**emulator_env(f"127.0.0.1:{free_port()}"), "CESYNC_RETRY_ATTEMPTS": "8"}  # retries: seconds of back-off
    result = cesync("plan", "--dir", str(repo), "--env", "prod", env=env)
    assert result.returncode == 1 and "tools/broken.yaml:" in result.stderr, result.stderr
    assert "cannot reach" not in result.stderr and "retry" not in result.stderr, result.stderr


@pytest.mark.parametrize("content", ["not json", '{"format_version": 99}', '{"format_version": 1, "changes": [{"x": 1}]}'])
def test_invalid_plan_file(tmp_path: Path, content: str) -> None:
    path = tmp_path / "plan.json"
    path.write_text(content)
    result = cesync("show", str(path))
    assert result.returncode == 1 and "error:" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["show", "apply"])
def test_a_missing_plan_file_says_how_one_is_made(tmp_path: Path, command: str) -> None:
    path = tmp_path / "plan.json"
    result = cesync(command, str(path), *(["--auto-approve"] if command == "apply" else []))
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip() == f"error: no plan file {path}: 'cesync plan --out {path}' saves one"


def test_env_required_when_several(repo: Path) -> None:
    result = cesync("plan", "--dir", str(repo))
    assert (
        result.returncode == 1 and "choose an environment with --env (or CESYNC_ENV): local, dev, staging, prod" in result.stderr
    )
    unknown = cesync("plan", "--dir", str(repo), "--env", "prd")
    assert "unknown environment 'prd'; did you mean 'prod'?" in unknown.stderr


class Running:
    """cesync in a child process, its output read line by line as it comes (to time a Ctrl-C)."""

    def __init__(self, args: list[str], env: dict[str, str], python_flags: tuple[str, ...] = ()) -> None:
        import threading

        full_env = {**os.environ, "NO_COLOR": "1", **env}
        self.proc = subprocess.Popen(
            [sys.executable, *python_flags, "-m", "cesync.cli", *args],
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self.changed = threading.Condition()
        self.readers = [
            threading.Thread(target=self._read, args=(stream, lines), daemon=True)
            for stream, lines in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))
        ]
        for t in self.readers:
            t.start()

    def _read(self, stream: Any, lines: list[str]) -> None:
        for line in stream:
            with self.changed:
                lines.append(line.rstrip("\n"))
                self.changed.notify_all()

    def wait_for(self, lines: list[str], predicate: Callable[[str], bool], timeout: float = 60) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: any(predicate(x) for x in lines) or self.proc.poll() is not None, timeout)
        assert any(predicate(x) for x in lines), (self.out, self.err)

    def interrupt(self) -> int:
        import signal

        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        code = self.proc.wait(timeout=60)
        for t in self.readers:
            t.join(timeout=10)
        return code


def _remaining(root: Path, host: str, env_name: str) -> list[dict[str, Any]]:
    rest = cesync("plan", "--dir", str(root), "--env", env_name, "--format", "json", env=emulator_env(host))
    assert rest.returncode == 0, rest.stderr
    return list(json.loads(rest.stdout)["changes"])


def test_ctrl_c_stops_new_actions_and_reports(repo: Path) -> None:
    import httpx

    with BackgroundServer() as server:
        httpx.post(f"{server.url}/admin/faults", json={"latency_ms": 300})
        run = Running(
            ["apply", "--dir", str(repo), "--env", "prod", "--auto-approve", "--parallelism", "1"],
            emulator_env(server.host),
        )
        run.wait_for(run.out, lambda line: line.startswith("done: create"))  # not a fixed sleep: fails under load
        assert run.interrupt() == 130, run.err
        out = "\n".join(run.out)
        assert "Interrupted:" in out and "not started" in out and "Traceback" not in "\n".join(run.err)
        httpx.post(f"{server.url}/admin/faults", json={"latency_ms": 0})
        created = out.count("done: ")
        assert created >= 1 and len(_remaining(repo, server.host, "prod")) == 23 - created  # plan shows exactly the rest


# Moments of a command, each an event it signals on its own output: Ctrl-C comes right after it.
MOMENTS: dict[str, tuple[str, Callable[[str], bool]]] = {
    "start-up": ("err", lambda line: line.endswith("| cesync")),  # the package loaded (-X importtime)
    "plan shown": ("out", lambda line: line.startswith("Plan for environment")),
    "first write": ("out", lambda line: line.startswith("done: ")),
    "mid-apply": ("out", lambda line: line.startswith("done: ") and "[5/" in line),
}


@pytest.mark.parametrize("moment", list(MOMENTS))
def test_ctrl_c_at_each_moment(repo: Path, moment: str) -> None:
    """SIGINT right after an event the command signals (start-up, the plan, the writes),
    never after a sleep: each moment is reached on any machine, and the exit is always 130."""
    import httpx

    stream, reached = MOMENTS[moment]
    with BackgroundServer() as server:
        httpx.post(f"{server.url}/admin/faults", json={"latency_ms": 100})
        run = Running(
            ["apply", "--dir", str(repo), "--env", "prod", "--auto-approve", "--parallelism", "1"],
            emulator_env(server.host),
            python_flags=("-X", "importtime"),
        )
        run.wait_for(run.out if stream == "out" else run.err, reached)
        code = run.interrupt()
        # progress of the app's CreateApp operation is not an error
        errors = [x for x in run.err if not x.startswith("import time:") and not x.startswith("create app ")]
        out = "\n".join(run.out)
        httpx.post(f"{server.url}/admin/faults", json={"latency_ms": 0})
        remaining = _remaining(repo, server.host, "prod")
    assert "Traceback" not in "\n".join(errors), errors
    created = out.count("done: ")
    assert code == 130, (moment, errors, out)  # 23 writes at 100 ms each: never over before the signal
    if "Interrupted:" in out:  # during apply: running calls finish, the rest is reported
        assert errors == [], errors
    else:
        assert errors == ["interrupted"] and created == 0, (moment, errors, out)
    assert len(remaining) == 23 - created, (moment, out)  # nothing half-applied or unaccounted for


@pytest.mark.parametrize(("argv", "code"), [(["--version"], 0), (["validate", "--dir", "/nonexistent-cesync"], 1), (["nope"], 1)])
def test_the_command_runs_atexit_and_flushes_and_exits_with_its_code(argv: list[str], code: int) -> None:
    """run() leaves through the interpreter's shutdown: atexit handlers run, a big output arrives
    whole, and the exit code is the command's."""
    probe = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write('atexit ran\\n'))\n"
        "sys.stdout.write('x' * 300_000)\n"  # more than a pipe holds: flushed before the exit
        f"sys.argv = ['cesync', *{argv!r}]\n"
        "from cesync.cli import run\n"
        "run()\n"
    )
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert r.returncode == code, r.stderr
    assert r.stdout.count("x") == 300_000 and "atexit ran" in r.stderr, r.stderr[-500:]


def test_a_closed_stdout_is_one_clear_line_not_an_internal_error(repo: Path) -> None:
    """`cesync validate | head -0`: the reader is gone before the first line is written."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        r = subprocess.run(
            [sys.executable, "-m", "cesync.cli", "validate", "--dir", str(repo)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert r.returncode == 1, r.stderr
    assert r.stderr == "error: the output was closed before it was all written (broken pipe)\n", r.stderr


def test_the_embedded_state_is_whole_in_its_file_after_the_command(repo: Path, tmp_path: Path) -> None:
    """The store closes itself at exit, so its writes are checkpointed into .cesync/ENV.sqlite
    (no -wal file left behind) and a copy of that one file holds the whole app."""
    applied = cesync_process("apply", "--dir", str(repo), "--env", "local", "--auto-approve")  # the real exit
    assert applied.returncode == 0, applied.stderr
    state = repo / ".cesync" / "local.sqlite"
    assert not state.with_name("local.sqlite-wal").exists()
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy, ignore=shutil.ignore_patterns(".cesync"))
    (copy / ".cesync").mkdir()
    shutil.copyfile(state, copy / ".cesync" / "local.sqlite")
    replan = cesync("plan", "--dir", str(copy), "--env", "local", "--detailed-exitcode")
    assert replan.returncode == 0, replan.stdout + replan.stderr


@pytest.mark.parametrize(
    ("code", "guarded"),
    [
        ("import cesync", False),  # a library import leaves the program's Ctrl-C alone
        ("import sys; sys.argv[0] = '/usr/bin/cesync'; import cesync", True),  # the script, before cesync.cli loads
        ("import sys; sys.argv[0] = '/usr/bin/cesync'; import cesync.cli", False),  # cesync.cli loaded: start-up is over
    ],
)
def test_the_startup_guard_is_only_the_command_lines(code: str, guarded: bool) -> None:
    probe = f"{code}\nimport signal\nfrom cesync import _interrupted_at_startup as g\nprint(signal.getsignal(signal.SIGINT) is g)"
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == str(guarded), r.stderr


SOURCE = "googleSearchTool:\n  name: src\n  description: Search.\n"
CARD = "widgetTool:\n  name: card\n  dataMapping:\n    sourceToolName: {ref: tools/src}\n"
MINIMAL_APP = "projects/p/locations/us/apps/a"


def test_prune_force_delete_and_agent_references(tmp_path: Path) -> None:
    """Deletes end to end: refused while an agent references the tool (naming it and the flag), then forced."""
    import httpx

    root = make_repo(tmp_path, {"tools/src.yaml": SOURCE, "tools/card.yaml": CARD})
    with BackgroundServer() as server:
        env = {"CES_EMULATOR_HOST": server.host}
        assert cesync("apply", "--dir", str(root), "--auto-approve", env=env).returncode == 0
        card = f"{MINIMAL_APP}/tools/card"
        httpx.post(f"{server.url}/admin/agents", json={"app": MINIMAL_APP, "agentId": "support", "tools": [card]})
        for name in ("src", "card"):
            (root / "tools" / f"{name}.yaml").unlink()
        # the agent is not the repo's, yet prune would delete it first: only the tools are targeted
        tools = ("--target", "tools/src", "--target", "tools/card")
        refused = cesync("apply", "--dir", str(root), "--prune", "--auto-approve", *tools, env=env)
        assert refused.returncode == 1 and "Traceback" not in refused.stderr
        assert f"failed: delete tool card ({card} is referenced by agent(s) support" in refused.stdout
        assert "pass --force-delete" in refused.stdout
        assert "skipped: delete tool src (tool card was not deleted)" in refused.stdout  # the referenced one waits
        forced = cesync("apply", "--dir", str(root), "--prune", "--force-delete", "--auto-approve", *tools, env=env)
        assert forced.returncode == 0, forced.stdout + forced.stderr
        assert forced.stdout.index("done: delete tool card") < forced.stdout.index("done: delete tool src")
        state = httpx.get(f"{server.url}/admin/state").json()
        assert state["apps"][MINIMAL_APP]["agents"]["support"].get("tools", []) == []  # force removed the reference
        again = cesync("plan", "--dir", str(root), "--detailed-exitcode", env=env)
        assert again.returncode == 0 and "+" not in again.stdout, again.stdout  # the agent stays, unmanaged


def test_delete_of_a_resource_already_gone_is_done(tmp_path: Path) -> None:
    """A saved plan deletes a tool that someone removed meanwhile: done, and the output says so."""
    import httpx

    root = make_repo(tmp_path, {"tools/src.yaml": SOURCE})
    with BackgroundServer() as server:
        env = {"CES_EMULATOR_HOST": server.host}
        assert cesync("apply", "--dir", str(root), "--auto-approve", env=env).returncode == 0
        (root / "tools" / "src.yaml").unlink()
        saved = tmp_path / "plan.json"
        assert cesync("plan", "--dir", str(root), "--prune", "--out", str(saved), env=env).returncode == 0
        httpx.delete(f"{server.url}/v1/{MINIMAL_APP}/tools/src").raise_for_status()
        result = cesync("apply", str(saved), "--dir", str(root), "--prune", "--auto-approve", env=env)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "done: delete tool src (already gone (deleted by someone else); nothing to do)" in result.stdout


def test_lost_reply_and_retries_are_said_on_stderr(tmp_path: Path) -> None:
    """Over a real socket: a create whose reply is dropped is resent, settled by reading back, and each retry is one line."""
    import httpx

    root = make_repo(tmp_path, {"tools/src.yaml": SOURCE})
    with BackgroundServer() as server:
        env = {"CES_EMULATOR_HOST": server.host}
        httpx.post(f"{server.url}/admin/faults", json={"drop_next": 1})
        applied = cesync("apply", "--dir", str(root), "--auto-approve", "--parallelism", "1", env=env)
        assert applied.returncode == 0, applied.stdout + applied.stderr
        assert "(the reply was lost; read back: as sent)" in applied.stdout
        retries = [line for line in applied.stderr.splitlines() if line.startswith("retry ")]
        assert len(retries) == 1 and ": reply lost (the request may have been carried out); next attempt in " in retries[0]
        httpx.post(f"{server.url}/admin/faults", json={"fail_status": "UNAVAILABLE"})
        failed = cesync("plan", "--dir", str(root), env={**env, "CESYNC_RETRY_ATTEMPTS": "3"})
        httpx.post(f"{server.url}/admin/faults", json={"fail_status": ""})
    lines = failed.stderr.splitlines()
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    assert sum(line.startswith("retry 1/2: list tool") for line in lines) >= 1, lines
    assert all("UNAVAILABLE (503); next attempt in " in line for line in lines if line.startswith("retry ")), lines
    assert lines[-1].startswith("error: ") and "UNAVAILABLE" in lines[-1]


@pytest.mark.parametrize("command", [["plan"], ["apply", "--auto-approve"]])
def test_ctrl_c_while_waiting_for_the_app_read_ahead(repo: Path, command: list[str]) -> None:
    """plan and apply read the app in a thread while they render (pipeline.readahead.ReadAhead): a Ctrl-C
    while they wait for that read (here a server that never answers) ends them at once with 130.
    SIGINT comes once the read is under way (the request arrived) and the command says it waits for it
    (-v: its debug line), never after a sleep."""
    import socket
    import time

    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(60)
        env = emulator_env(f"127.0.0.1:{server.getsockname()[1]}")
        run = Running([*command, "-v", "--dir", str(repo), "--env", "prod"], env)
        conn, _ = server.accept()
        with conn:
            conn.settimeout(60)
            assert conn.recv(65536).startswith(b"GET ")
            run.wait_for(run.err, lambda line: line.endswith("the repo is rendered; waiting for the app's read"))
            started = time.monotonic()
            code = run.interrupt()
    assert code == 130 and run.err[-1:] == ["interrupted"], (code, run.err)
    assert "Traceback" not in "\n".join(run.err)
    assert time.monotonic() - started < 10


def test_the_progress_line_shows_the_count_the_rate_and_the_time_left(capsys: pytest.CaptureFixture[str]) -> None:
    from cesync.cli.core import _Progress
    from cesync.pipeline.apply import Outcome

    now = [100.0]
    progress = _Progress(30, enabled=True, clock=lambda: now[0])
    for i in range(10):
        now[0] += 0.5
        progress.event(Outcome(KINDS["tool"], f"t{i}", "create", "done"))
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == "done: create tool t9  [10/30, 2.0/s, ETA 10s]"
    now[0] += 60
    assert progress.pace() == "[10/30, 0.2/s, ETA 2m10s]"  # 10 in 65 s, 20 left


def test_a_refused_write_prints_every_detail_at_the_field_in_the_repo(tmp_path: Path) -> None:
    """A BadRequest field violation is printed at the file:line:col the field came from; JSON keeps the details."""
    files = {
        "deployments/web.yaml": (
            "displayName: Web\nchannelProfile: {channelType: WEB_UI}\nappVersion: projects/p/locations/us/apps/a/versions/nope\n"
        )
    }
    root = make_repo(tmp_path, files)
    with BackgroundServer(auto_create_apps=True) as server:
        common = ("--dir", str(root), "--env", "local", "--endpoint", server.url, "--auto-approve")
        text = cesync("apply", *common)
        as_json = cesync("apply", *common, "--format", "json")
    assert text.returncode == 1
    assert (
        "    BadRequest: deployments/web.yaml:3:13: deployment.appVersion: "
        "projects/p/locations/us/apps/a/versions/nope does not exist"
    ) in text.stdout
    [failed] = [o for o in json.loads(as_json.stdout)["outcomes"] if o["status"] == "failed"]
    assert failed["details"][0]["fieldViolations"][0]["field"] == "deployment.appVersion"


def test_validation_errors_ces_reports_are_shown_by_plan_and_apply(tmp_path: Path) -> None:
    """App/Agent validationErrors and Example.invalid (output only): shown, and --fail-on-validation-errors fails."""
    import httpx

    files = {"agents/root.yaml": "displayName: Root\ninstruction: Help.\n"}
    root = make_repo(tmp_path, files)
    app = "projects/p/locations/us/apps/a"
    with BackgroundServer(auto_create_apps=True) as server:
        common = ("--dir", str(root), "--env", "local", "--endpoint", server.url)
        assert cesync("apply", *common, "--auto-approve").returncode == 0
        injected = {"name": f"{app}/agents/root", "fields": {"validationErrors": ["Tool 'x' is not found."]}}
        httpx.post(f"{server.url}/admin/inject", json=injected).raise_for_status()
        plan = cesync("plan", *common)
        failing = cesync("plan", *common, "--fail-on-validation-errors", "--format", "json")
        (root / "tools" / "greet.yaml").write_text((root / "tools" / "greet.yaml").read_text().replace("Hello ", "Hi "))
        applied = cesync("apply", *common, "--auto-approve", "--fail-on-validation-errors")
    line = f"  ! {app}/agents/root: validationErrors: Tool 'x' is not found."
    assert plan.returncode == 0 and line in plan.stdout and "CES reports problems in the app" in plan.stdout
    assert failing.returncode == 1 and json.loads(failing.stdout)["validation"] == {
        f"{app}/agents/root": ["validationErrors: Tool 'x' is not found."]
    }
    assert "--fail-on-validation-errors" in failing.stderr
    assert applied.returncode == 1 and "1 updated" in applied.stdout and line in applied.stdout


@pytest.mark.parametrize(
    "args", [("plan", "--detailed-exitcode", "--formt", "json"), ("plan", "--endpoint", "10.0.0.1:9"), ("nosuch",)]
)
def test_a_usage_error_exits_1_not_2_which_means_changes(repo: Path, args: tuple[str, ...]) -> None:
    # click's own exit code for a usage error is 2, which --detailed-exitcode gives to "changes present"
    result = cesync_process(*args, cwd=repo)
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert "Error: " in result.stderr and "Traceback" not in result.stderr


def test_an_embedded_state_of_an_older_name_is_moved_and_read(tmp_path: Path) -> None:
    """.cesync/<env>.json held SQLite under a JSON name (issue #38, finding 8): it is now <env>.sqlite,
    and a state file of the old name, SQLite or JSON, is moved there with its app."""
    from cesync.client.connect import embedded_state

    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "minimal", repo)
    assert cesync("apply", "--dir", str(repo), "--auto-approve").returncode == 0
    new = repo / ".cesync" / "local.sqlite"
    assert new.read_bytes().startswith(b"SQLite format 3")
    new.rename(repo / ".cesync" / "local.json")
    assert embedded_state(repo, "local") == new and new.exists() and not (repo / ".cesync" / "local.json").exists()
    assert cesync("plan", "--dir", str(repo), "--detailed-exitcode").returncode == 0  # the same app


@pytest.mark.parametrize(
    ("args", "wrong"),
    [
        ((), "agent tools"),  # cesync manages whole apps
        (("fmt",), "tool and toolset files"),  # fmt formats every kind
        (("schema",), "tool files, toolset files"),
        (("diff",), "promote from"),  # diff compares two live apps; it is not a promotion
        (("emulator",), "older emulators"),
    ],
)
def test_help_says_what_the_command_does(args: tuple[str, ...], wrong: str) -> None:
    """Wrong words found by a team's second week (issue #38, finding 8)."""
    said = cesync(*args, "--help")
    assert said.returncode == 0 and wrong not in " ".join(said.stdout.split()), said.stdout


def test_the_action_and_ci_page_say_apps_not_agent_tools() -> None:
    from tests.conftest import ROOT

    for page in (ROOT / "action.yml", ROOT / "docs" / "ci-cd.md", ROOT / "README.md"):
        assert "agent tools kept" not in page.read_text() and "CES agent tools" not in page.read_text(), page


def test_each_run_has_a_scrubber_of_its_own() -> None:
    """The group makes one Scrubber per run (the root context's object); out/err/save use it."""
    from cesync.cli import main, scrubber
    from cesync.core.scrubber import Scrubber

    with main.make_context("cesync", ["validate"]) as first:
        one = scrubber()
        one.remember(["sk-first-run-only"])
    with main.make_context("cesync", ["validate"]) as second:
        other = scrubber()
    assert isinstance(one, Scrubber) and scrubber(first) is one and scrubber(second) is other
    assert other is not one and other.scrub("sk-first-run-only") == "sk-first-run-only"
    assert not scrubber().known()  # outside a run: an empty one


def test_an_internal_errors_traceback_is_scrubbed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CESYNC_DEBUG's traceback is output like any other: an exception that quotes a sensitive
    value shows it masked there too, not only in the one-line message."""
    from cesync.repo.repo import Repo

    secret = "Tr4ceback-Secret-0123"

    def broken(self: Repo, *args: Any, **kwargs: Any) -> list[Any]:
        raise RuntimeError(f"could not use {secret}")

    monkeypatch.setattr(Repo, "validate", broken)
    root = make_repo(tmp_path, {})
    config = root / "cesync.yaml"
    config.write_text(config.read_text().replace("environments:", "defaults:\n  sensitive: [TOKEN]\nenvironments:"))
    r = cesync("validate", "--dir", str(root), env={"CESYNC_DEBUG": "1", "CESYNC_VAR_TOKEN": secret})
    assert r.returncode == 1 and "Traceback" in r.stderr and "RuntimeError" in r.stderr, r.stderr
    assert secret not in r.stderr and "(sensitive)" in r.stderr
