"""Text from the app, a server and a tool is data in every output channel and format
(issue #34 findings 3, 4 and 5), as tests/core/test_sensitive.py checks secrets in every channel.

A console user plants generated hostile text (tests/hostile_text.py) in every remote field an
output shows: a tool's description, a toolset's display name, the app's validationErrors, a
version's display name, a tool's code (so its answers), an evaluation's name and what it
missed; a hostile server answers with it as its error message and details. Then every command
that shows them runs in every format, and each channel is read as what reads it: the terminal
and CI log (no control character but cesync's colours, no line a runner takes as a command),
the pull-request comment (Markdown: no HTML, image, link, mention or fake paragraph of
theirs), JUnit (parses) and JSON (parses).
"""

from __future__ import annotations

import io
import json
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from cesync.core.plan import Plan
from cesync.emulator.server import BackgroundServer
from cesync.escape import output
from cesync.render import render
from tests.fake_forge import TOKEN, serve
from tests.helpers import cesync, cesync_process
from tests.hostile import HostileServer
from tests.hostile_text import hostile, markdown_problems, parses_as_json, parses_as_xml, terminal_and_ci_problems
from tests.pipeline.test_pull import _set, console_edit, fresh_repo

# A few generated cases each (every command runs in each), not shrunk: a failure prints its case.
SLOW = settings(
    max_examples=4,
    deadline=None,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def forge() -> Iterator[Any]:
    fake, server = serve()
    yield fake
    server.shutdown()


def _printed(*args: str, code: int | None = None, env: dict[str, str | None] | None = None) -> str:
    r = cesync(*args, env=env)
    said = r.stdout + r.stderr
    if code is not None:
        assert r.returncode == code, said
    assert terminal_and_ci_problems(said) == [], (args, said)
    return r.stdout


@SLOW
@given(description=hostile, name=hostile, problem=hostile, answer=hostile)
def test_the_app_s_text_is_data_in_every_command_and_format(
    emulator: BackgroundServer, forge: Any, description: str, name: str, problem: str, answer: str
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root, parent = fresh_repo(Path(tmp), emulator)
        url = emulator.url
        console_edit(
            emulator, f"{parent}/tools/ask", "clientFunction.description", _set(["clientFunction", "description"], description)
        )
        console_edit(emulator, f"{parent}/toolsets/shop", "displayName", _set(["displayName"], name))
        made = httpx.post(
            f"{url}/v1/{parent}/versions", params={"versionId": "v1"}, json={"displayName": name, "description": description}
        )
        assert made.status_code == 200, made.text
        agent = httpx.post(
            f"{url}/v1/{parent}/agents", params={"agentId": "helper"}, json={"displayName": name, "instruction": "Help."}
        )
        assert agent.status_code == 200, agent.text
        errors = {"name": f"{parent}/agents/helper", "fields": {"validationErrors": [problem]}}
        httpx.post(f"{url}/admin/inject", json=errors).raise_for_status()
        code = f"def greet(name: str) -> dict:\n    return {{'greeting': {answer!r}}}\n"
        console_edit(emulator, f"{parent}/tools/greet", "pythonFunction.pythonCode", _set(["pythonFunction", "pythonCode"], code))
        d = ["--dir", str(root), "--endpoint", url]

        for fmt in ("text", "markdown", "json"):
            shown = _printed("plan", *d, "--format", fmt, code=0)
            if fmt == "markdown":
                assert markdown_problems(shown) == [], shown
            if fmt == "json":
                assert parses_as_json(shown)
        saved = Path(tmp) / "plan.json"
        _printed("plan", *d, "--out", str(saved), code=0)
        plan = Plan.from_json(saved.read_text())  # colour is only for a terminal: the renderer as the command calls it on one
        assert terminal_and_ci_problems(output(render(plan, "text", color=True)), colour=True) == []
        for fmt in ("text", "markdown", "json"):
            _printed("show", str(saved), "--format", fmt, code=0)
        forge_env: dict[str, str | None] = {"GITHUB_API_URL": forge.url, "GITHUB_REPOSITORY": "o/r", "GITHUB_TOKEN": TOKEN}
        _printed("comment", str(saved), "--provider", "github", "--pr", "7", env=forge_env, code=0)
        for thread in forge.comments.values():
            for comment in thread:
                assert markdown_problems(comment["body"]) == [], comment["body"]
        for fmt in ("text", "json"):
            _printed("versions", *d, "--format", fmt, code=0)
        _printed("pull", *d, "--dry-run")  # the app's text as the repo's files would hold it, as diffs
        _printed("exec", "greet", "--args", '{"name": "x"}', *d, code=0)  # the tool's answer

        (root / "tests").mkdir(exist_ok=True)
        (root / "tests" / "t.yaml").write_text(
            "tests:\n  - name: greets\n    toolCall: {tool: greet, args: {name: x}}\n"
            "    toolResponse: {response: {result: {greeting: something else}}}\n"
        )
        junit = Path(tmp) / "junit.xml"
        for fmt in ("text", "json"):
            _printed("test", *d, "--format", fmt, "--junit", str(junit), code=1)
            assert parses_as_xml(junit.read_text())


@SLOW
@given(message=hostile, detail=hostile)
def test_a_server_s_error_message_is_data(tmp_path: Path, message: str, detail: str) -> None:
    error = {
        "code": 400,
        "status": "INVALID_ARGUMENT",
        "message": message,
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [{"field": detail, "description": message}],
            },
            {"@type": "type.googleapis.com/google.rpc.LocalizedMessage", "locale": detail, "message": message},
        ],
    }
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    from tests.helpers import make_repo

    repo = make_repo(root, {})
    with HostileServer(lambda method, path, query: (400, json.dumps({"error": error}).encode())) as server:
        for fmt in ("text", "json", "markdown"):
            _printed("plan", "--dir", str(repo), "--endpoint", server.url, "--format", fmt, code=1)


@given(name=hostile, missed=hostile)
def test_an_evaluation_s_text_is_data_in_every_format(name: str, missed: str) -> None:
    from cesync.core.evalreport import build_report
    from cesync.render.evaluations import render_eval_junit, render_eval_markdown, render_eval_text

    app = "projects/p/locations/us/apps/a"
    failed = {
        "expectation": {"toolResponse": {"tool": f"{app}/tools/t", "response": {"result": missed}}, "note": missed},
        "observedToolResponse": {"tool": f"{app}/tools/t", "response": {"result": {"said": missed}}},
        "outcome": "FAIL",
    }
    result = {
        "name": f"{app}/evaluations/e/results/r0",
        "executionState": "COMPLETED",
        "evaluationStatus": "FAIL",
        "goldenResult": {"turnReplayResults": [{"expectationOutcome": [failed]}]},
    }
    report = build_report(
        "dev",
        app,
        {"name": f"{app}/evaluationRuns/run1", "runCount": 1},
        [{"name": f"{app}/evaluations/e", "displayName": name}],
        [result],
        None,
        thresholds_from="app",
    )
    assert markdown_problems(render_eval_markdown(report)) == []
    assert terminal_and_ci_problems(output(render_eval_text(report))) == []
    assert parses_as_xml(render_eval_junit(report))


@SLOW
@given(text=hostile, key=hostile)
def test_a_hostile_server_s_resources_are_data(tmp_path: Path, text: str, key: str) -> None:
    """What only a server (not a console user) controls: etags, field names cesync does not model,
    the names of resources the repo does not hold; in every format of plan."""
    from tests.helpers import make_repo
    from tests.hostile import APP

    greet = {
        "name": f"{APP}/tools/greet",
        "etag": text,
        "pythonFunction": {"name": "greet", "pythonCode": text, "description": text},
        f"x{key}": text,  # a field cesync does not model, named by the server
    }
    other = {"name": f"{APP}/tools/other", "etag": text, "clientFunction": {"name": "other", "description": text}}

    def answer(method: str, path: str, query: dict[str, str]) -> tuple[int, bytes]:
        if path == APP:
            return 200, json.dumps({"name": APP, "displayName": text, "description": text, "etag": text}).encode()
        if path == f"{APP}/tools":
            return 200, json.dumps({"tools": [greet, other]}).encode()
        return 200, b"{}"

    repo = make_repo(Path(tempfile.mkdtemp(dir=tmp_path)), {})
    with HostileServer(answer) as server:
        for fmt in ("text", "markdown", "json"):
            args = ("plan", "--dir", str(repo), "--endpoint", server.url, "--format", fmt)
            r = cesync(*args)
            said = r.stdout + r.stderr
            assert terminal_and_ci_problems(said) == [], said
            if fmt == "markdown" and r.returncode == 0:
                assert markdown_problems(r.stdout) == [], r.stdout
            if fmt == "json" and r.returncode == 0:
                assert parses_as_json(r.stdout)
        # a process of its own: -vv sets the loggers of the process it runs in
        verbose = cesync_process("plan", "--dir", str(repo), "--endpoint", server.url, "-vv")
        assert terminal_and_ci_problems(verbose.stdout + verbose.stderr) == [], verbose.stderr


# What cesync's Mermaid is made of (render/graph.py): every label quoted, its text plain
# characters and entity codes only, so no id can close a label, the fence or the diagram.
_LABEL = r'"[A-Za-z0-9 _.,/#;\-]*"'
_MERMAID_LINE = re.compile(
    rf"^(flowchart LR|  n\d+[\[\(\{{>/]{{1,2}}{_LABEL}[\]\)\}}/]{{1,2}}|  more\[{_LABEL}\]"
    rf"|  n\d+ -->\|{_LABEL}\| n\d+|  classDef [a-z]+ [a-z0-9:#,\-]+|  class [n0-9,]+ [a-z]+)$"
)
_DOT_LINE = re.compile(
    r'^(digraph app \{|  rankdir=LR;|  node \[.*\];|  (n\d+|more) \[label="(?:[^"\\]|\\.)*".*\];|  n\d+ -> n\d+ \[label="[a-z, ]*"\];|\})$'
)


@SLOW
@given(
    ids=st.lists(st.from_regex(r"[a-z][a-z0-9_-]{0,20}", fullmatch=True), min_size=1, max_size=3, unique=True),
    text=hostile,
    bad_id=hostile.filter(lambda t: "/" not in t),
)
def test_a_hostile_server_s_text_is_data_in_the_graph_and_the_plan_s_picture(
    tmp_path: Path, ids: list[str], text: str, bad_id: str
) -> None:
    """cesync graph --live in every format, and the plan comment's picture of what it touches
    (the app's tools deleted with --prune, an agent that uses them), from a server whose display
    names and descriptions are hostile: Mermaid and DOT stay made of cesync's lines only, JSON
    keeps each id as sent. An id that is not CES's (letters, digits, '-', '_') is refused before
    any picture is drawn, and the refusal shows it escaped."""
    from tests.helpers import make_repo
    from tests.hostile import APP

    served = list(ids)

    def answer(method: str, path: str, query: dict[str, str]) -> tuple[int, bytes]:
        tools = [
            {"name": f"{APP}/tools/{rid}", "displayName": text, "clientFunction": {"name": "t", "description": text}}
            for rid in served
        ]
        agent = {"name": f"{APP}/agents/{ids[0]}", "displayName": text, "instruction": text, "tools": [t["name"] for t in tools]}
        if path == APP:
            return 200, json.dumps({"name": APP, "displayName": text}).encode()
        if path == f"{APP}/tools":
            return 200, json.dumps({"tools": tools}).encode()
        if path == f"{APP}/agents":
            return 200, json.dumps({"agents": [agent]}).encode()
        return 200, b"{}"

    repo = make_repo(Path(tempfile.mkdtemp(dir=tmp_path)), {})
    with HostileServer(answer) as server:
        d = ("--dir", str(repo), "--endpoint", server.url)
        drawn = _printed("graph", "--live", *d, "--format", "mermaid", code=0)
        assert [line for line in drawn.splitlines() if not _MERMAID_LINE.match(line)] == [], drawn
        drawn = _printed("graph", "--live", *d, "--format", "dot", code=0)
        assert [line for line in drawn.splitlines() if not _DOT_LINE.match(line)] == [], drawn
        data = json.loads(_printed("graph", "--live", *d, "--format", "json", code=0))
        assert {n["id"] for n in data["nodes"] if n["kind"] == "tool"} == set(ids)
        comment = _printed("plan", *d, "--prune", "--format", "markdown", code=0)
        assert markdown_problems(comment) == [], comment
        picture = comment.split("```mermaid\n", 1)[1].split("\n```", 1)[0]
        assert [line for line in picture.splitlines() if not _MERMAID_LINE.match(line)] == [], picture
        _printed("plan", *d, "--prune", code=0)
        served.append(bad_id)
        for fmt in ("mermaid", "dot", "json"):
            _printed("graph", "--live", *d, "--format", fmt, code=1)
        _printed("plan", *d, "--prune", "--format", "markdown", code=1)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@given(message=hostile, field=hostile)
def test_a_server_s_error_is_data_on_the_apply_progress_bar(message: str, field: str) -> None:
    """On a terminal apply prints each outcome above its progress bar (rich), not through
    cli.out: a server's error message and its field violations reach the screen there."""
    from unittest import mock

    from cesync.api.kinds import KINDS
    from cesync.cli.core import _Progress
    from cesync.pipeline.apply import Outcome

    violation = {
        "@type": "type.googleapis.com/google.rpc.BadRequest",
        "fieldViolations": [{"field": field, "description": message}],
    }
    screen = _Terminal()
    with mock.patch.object(sys, "stdout", screen):
        progress = _Progress(1, enabled=True)
        assert progress.bar is not None  # the terminal's path, not the CI log's
        progress.bar.console.file = screen
        progress.event(Outcome(KINDS["tool"], "t", "update", "failed", message, details=[violation]))
        progress.close()
    # what rich itself writes to draw and clear the bar: colours, erase line, cursor up, cursor shown
    own = re.sub(r"\x1b\[[0-9;]*m|\x1b\[2K|\x1b\[1A|\x1b\[\?25[lh]|\r", "", screen.getvalue())
    assert terminal_and_ci_problems(own) == [], own


@SLOW
@given(text=hostile)
def test_a_server_s_quota_and_retry_answers_are_data(tmp_path: Path, text: str) -> None:
    """The lines cesync prints while it waits (quota: which metric and limit; retry: the status)
    are written to stderr by the client itself, not through cli.err: a server's 429 metadata
    and its status names must be inert there too."""
    from tests.helpers import make_repo

    info = {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "RATE_LIMIT_EXCEEDED",  # a quota refusal: the client paces and says over which metric
        "metadata": {"quota_metric": text, "quota_limit_value": text},
    }
    answers = iter([(429, "RESOURCE_EXHAUSTED"), (429, "RESOURCE_EXHAUSTED"), (503, text)])

    def answer(method: str, path: str, query: dict[str, str]) -> tuple[int, bytes]:
        code, status = next(answers, (404, "NOT_FOUND"))
        return code, json.dumps({"error": {"code": code, "status": status, "message": text, "details": [info]}}).encode()

    repo = make_repo(Path(tempfile.mkdtemp(dir=tmp_path)), {})
    with HostileServer(answer) as server:
        _printed("plan", "--dir", str(repo), "--endpoint", server.url)
