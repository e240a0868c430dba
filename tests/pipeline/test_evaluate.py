"""cesync eval end to end, over HTTP against the emulator and read back with Google's official
v1beta client: evaluations apply and plan empty, eval passes, then fails after a tool change
naming the evaluation and the expectation; JUnit is written; every bad input is one message."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import ces_v1beta

from cesync.core.scrubber import Scrubber
from cesync.emulator.server import BackgroundServer
from tests.fake_forge import Forge, serve
from tests.helpers import cesync_in_process, make_repo

APP = "projects/p/locations/us/apps/a"
GOLDEN = """displayName: Greets Ada
tags: [tools, smoke]
golden:
  turns:
    - steps:
        - userInput: {text: "Hi, I am Ada"}
        - expectation:
            toolCall:
              tool: {ref: tools/greet}
              args: {name: Ada}
        - expectation:
            note: greets by name
            toolResponse:
              tool: {ref: tools/greet}
              response: {result: {greeting: Hello Ada}}
"""
CHAT = """displayName: Says hello back
tags: [chat]
golden:
  turns:
    - steps:
        - userInput: {text: Hello}
        - expectation:
            agentResponse:
              role: agent
              chunks: [{text: Hello! How can I help?}]
"""
GREET_V2 = """pythonFunction:
  name: greet
  pythonCode: |
    def greet(name: str) -> dict:
        return {"greeting": "Good day " + name}
timeout: 1.5s
"""


@pytest.fixture
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer() as s:
        yield s


@pytest.fixture
def google(server: BackgroundServer) -> ces_v1beta.EvaluationServiceClient:
    return ces_v1beta.EvaluationServiceClient(
        credentials=AnonymousCredentials(), transport="rest", client_options=ClientOptions(api_endpoint=server.url)
    )


def run(root: Path, server: BackgroundServer, *args: str) -> tuple[int, str, str]:
    r = cesync_in_process(*args, "--dir", str(root), "--env", "local", "--endpoint", server.url)
    return r.returncode, r.stdout, r.stderr


def test_eval_passes_then_fails_after_a_tool_change(
    tmp_path: Path, server: BackgroundServer, google: ces_v1beta.EvaluationServiceClient
) -> None:
    root = make_repo(tmp_path, {"evaluations/greets.yaml": GOLDEN})
    code, out, err = run(root, server, "apply", "--auto-approve")
    assert code == 0, out + err
    code, out, err = run(root, server, "plan", "--detailed-exitcode")
    assert code == 0, out + err  # evaluations plan empty after apply

    junit = tmp_path / "out" / "evals.xml"
    code, out, err = run(root, server, "eval", "--junit", str(junit))
    assert code == 0, out + err
    assert "PASS  greets (Greets Ada)" in out and "1 evaluation: 1 passed, 0 failed" in out
    assert "warning" not in err  # the app holds the repo's evaluation
    suite = ET.fromstring(junit.read_text()).find("testsuite")
    assert suite is not None and suite.get("tests") == "1" and suite.get("failures") == "0"

    # Google's client reads the run and its result as the emulator serves them
    [run_] = list(google.list_evaluation_runs(parent=APP))
    assert run_.state == ces_v1beta.EvaluationRun.EvaluationRunState.COMPLETED
    assert run_.progress.passed_count == 1 and run_.progress.total_count == 1
    [result] = list(google.list_evaluation_results(parent=f"{APP}/evaluations/greets"))
    assert result.evaluation_status == ces_v1beta.EvaluationResult.Outcome.PASS
    assert result.evaluation_run == run_.name and result.name in run_.evaluation_results
    outcomes = result.golden_result.turn_replay_results[0].expectation_outcome
    assert [o.outcome for o in outcomes] == [ces_v1beta.EvaluationResult.Outcome.PASS] * 2
    assert dict(outcomes[1].observed_tool_response.response) == {"result": {"greeting": "Hello Ada"}}
    evaluation = google.get_evaluation(name=f"{APP}/evaluations/greets")
    assert run_.name in evaluation.evaluation_runs
    assert evaluation.aggregated_metrics.metrics_by_app_version[0].pass_count == 1

    code, out, err = run(root, server, "plan", "--detailed-exitcode")
    assert code == 0, out + err  # what a run writes into an evaluation is CES's (output only), not a change

    (root / "tools" / "greet.yaml").write_text(GREET_V2)
    code, out, err = run(root, server, "apply", "--auto-approve")
    assert code == 0, out + err
    code, out, err = run(root, server, "eval", "--junit", str(junit), "--runs", "2")
    assert code == 1, out + err
    assert "FAIL  greets (Greets Ada), 0/2 runs passed (0%)" in out
    assert (
        'turn 1, toolResponse tools/greet (greets by name): expected response {"result": {"greeting": "Hello Ada"}}, '
        'the tool answered {"result": {"greeting": "Good day Ada"}} (run 1, 2)'
    ) in out
    failure = ET.fromstring(junit.read_text()).find("testsuite/testcase/failure")
    assert failure is not None and "toolResponse tools/greet (greets by name)" in (failure.get("message") or "")
    assert "run evaluations" in err  # the operation was polled, with progress lines


def test_an_evaluation_the_app_holds_otherwise_is_run_as_the_app_has_it_with_a_warning(
    tmp_path: Path, server: BackgroundServer
) -> None:
    root = make_repo(tmp_path, {"evaluations/greets.yaml": GOLDEN, "evaluations/chat.yaml": CHAT})
    assert run(root, server, "apply", "--auto-approve")[0] == 0
    # changed in the repo, not applied: the repo's would fail (Bob is not greeted as Ada), the app's passes
    (root / "evaluations" / "greets.yaml").write_text(
        GOLDEN.replace("Greets Ada", "Greets Bob").replace("{name: Ada}", "{name: Bob}")
    )
    code, out, err = run(root, server, "eval", "--tag", "tools")
    assert code == 0 and "PASS  greets (Greets Ada)" in out, out + err
    assert (
        "warning: evaluations/greets differs from the app's (displayName, golden.turns): the app's is run; "
        "'cesync plan' shows the difference, 'cesync apply' (or 'cesync preview') puts the repo's in the app"
    ) in err
    assert "evaluations/chat" not in err  # the same in both
    assert run(root, server, "apply", "--auto-approve")[0] == 0
    code, out, err = run(root, server, "eval", "--tag", "tools")
    assert code == 1 and "FAIL  greets (Greets Bob)" in out and "warning" not in err, out + err


def test_what_the_emulator_cannot_judge_is_not_a_pass_until_a_test_says(tmp_path: Path, server: BackgroundServer) -> None:
    root = make_repo(tmp_path, {"evaluations/greets.yaml": GOLDEN, "evaluations/chat.yaml": CHAT})
    assert run(root, server, "apply", "--auto-approve")[0] == 0
    code, out, _ = run(root, server, "eval", "--format", "json")
    assert code == 1
    report = json.loads(out)
    assert report["counts"] == {"passed": 1, "failed": 0, "not evaluated": 1, "error": 0}
    code, out, _ = run(root, server, "eval", "--tag", "tools")
    assert code == 0 and "chat" not in out  # --tag chooses
    httpx.post(
        f"{server.url}/admin/evaluationOutcomes",
        json={"evaluation": f"{APP}/evaluations/chat", "turn": 0, "step": 1, "outcome": "PASS"},
    ).raise_for_status()
    code, out, err = run(root, server, "eval", "--format", "markdown")
    assert code == 0, out + err
    assert out.startswith(f"<!-- cesync-eval:local:{APP} -->") and "All evaluations passed." in out


@pytest.mark.parametrize(
    ("files", "args", "message"),
    [
        ({}, (), "the repo has no evaluations"),
        (
            {"evaluations/greets.yaml": GOLDEN},
            ("--tag", "smok"),
            "no evaluation has the tag 'smok' (tags in the repo: smoke, tools); did you mean 'smoke'?",
        ),
        ({"evaluations/greets.yaml": GOLDEN}, (), "1 evaluation of the repo is not in"),
        ({"evaluations/greets.yaml": GOLDEN}, ("--min-pass-rate", "0.5"), "--min-pass-rate needs --runs N"),
    ],
    ids=["no-evaluations", "unknown-tag", "not-applied", "rate-without-runs"],
)
def test_bad_input_is_one_clear_message(
    tmp_path: Path, server: BackgroundServer, files: dict[str, str], args: tuple[str, ...], message: str
) -> None:
    root = make_repo(tmp_path, files)
    httpx.post(f"{server.url}/admin/apps", json={"name": APP}).raise_for_status()
    code, out, err = run(root, server, "eval", *args)
    assert code == 1 and message in err, out + err
    assert "Traceback" not in err


@pytest.mark.parametrize("faults", [{"fail_status": "PERMISSION_DENIED"}, {"rate_503": 1.0}], ids=["refused", "unavailable"])
def test_api_errors_are_one_message_not_a_traceback(tmp_path: Path, server: BackgroundServer, faults: dict[str, object]) -> None:
    root = make_repo(tmp_path, {"evaluations/greets.yaml": GOLDEN})
    assert run(root, server, "apply", "--auto-approve")[0] == 0
    httpx.post(f"{server.url}/admin/faults", json=faults).raise_for_status()
    code, out, err = run(root, server, "eval")
    assert code == 1 and "error:" in err and "Traceback" not in err, out + err


def test_comment_keeps_the_evaluation_summary_beside_the_plan(tmp_path: Path, server: BackgroundServer) -> None:
    from tests.test_gitops import github_env

    forge: Forge
    forge, http = serve()
    try:
        root = make_repo(tmp_path, {"evaluations/greets.yaml": GOLDEN})
        assert run(root, server, "apply", "--auto-approve")[0] == 0
        code, out, _ = run(root, server, "eval", "--format", "json")
        assert code == 0
        report = tmp_path / "eval.json"
        report.write_text(out)
        env = github_env(forge, tmp_path / "event.json", 5)
        from click.testing import CliRunner

        from cesync.cli import main

        for expected in ("created", "updated"):
            r = CliRunner().invoke(main, ["comment", str(report)], env=env)
            assert r.exit_code == 0 and f"{expected} the evaluation comment for 'local' on #5" in r.stdout, r.stdout
        [comment] = forge.thread("gh:acme/tools#5")
        assert comment["body"].startswith(f"<!-- cesync-eval:local:{APP} -->") and "`greets`" in comment["body"]
    finally:
        http.shutdown()


def test_an_operation_that_fails_is_an_api_error_naming_the_run(tmp_path: Path, server: BackgroundServer) -> None:
    """The run is deleted while its operation runs: the operation ends with NOT_FOUND, and eval says so."""
    import asyncio

    from cesync.client.api import CesClient
    from cesync.errors import ApiError
    from cesync.pipeline.context import open_context
    from cesync.pipeline.evaluate import evaluate

    root = make_repo(tmp_path, {"evaluations/greets.yaml": GOLDEN})
    assert run(root, server, "apply", "--auto-approve")[0] == 0
    ctx = open_context(root, "local", server.url, scrubber=Scrubber())
    lines: list[str] = []

    def notify(line: str) -> None:  # the first progress line: the run exists, its operation is not done
        lines.append(line)
        if len(lines) == 1:
            [made] = httpx.get(f"{server.url}/v1beta/{APP}/evaluationRuns").json()["evaluationRuns"]
            httpx.delete(f"{server.url}/v1beta/{made['name']}").raise_for_status()

    async def go() -> None:
        async with CesClient(server.url, notify=notify) as client:
            await evaluate(ctx, client)

    with pytest.raises(ApiError) as caught:
        asyncio.run(go())
    assert caught.value.status == "NOT_FOUND" and "evaluation run" in str(caught.value)
    # the replay goes on in the background: by the first line its one result may be done, not its operation
    assert re.match(rf"run evaluations {re.escape(APP)}: running \(0s, [01] of 1 results, operation ", lines[0]), lines


def test_ctrl_c_while_the_run_is_polled_exits_130_with_one_line(tmp_path: Path, server: BackgroundServer) -> None:
    from tests.cli.test_cli import Running

    root = make_repo(tmp_path, {"evaluations/greets.yaml": GOLDEN})
    assert run(root, server, "apply", "--auto-approve")[0] == 0
    httpx.post(f"{server.url}/admin/config", json={"operationDelaySeconds": 60}).raise_for_status()
    running = Running(["eval", "--dir", str(root), "--env", "local", "--endpoint", server.url], {})
    running.wait_for(running.err, lambda line: line.startswith("run evaluations "))
    code = running.interrupt()
    assert code == 130 and running.err[-1] == "interrupted", running.err
    assert not any("Traceback" in line for line in running.err)


def test_eval_runs_in_the_preview_app(tmp_path: Path, server: BackgroundServer) -> None:
    root = make_repo(tmp_path, {"evaluations/greets.yaml": GOLDEN})
    code, out, err = run(root, server, "preview", "--name", "pr-3", "--auto-approve")
    assert code == 0, out + err
    code, out, err = run(root, server, "eval", "--preview", "pr-3")
    assert code == 0 and f"Evaluations of {APP}-pr-3 ('local')" in out, out + err
    code, out, err = run(root, server, "eval")  # the environment's own app was never applied
    assert code == 1 and f"the app {APP} does not exist" in err, out + err
