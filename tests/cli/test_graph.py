"""cesync graph: the example app drawn from the repo and from the live app, and its errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import cesync, make_repo, mermaid_parse

EXAMPLE = Path(__file__).parents[2] / "examples" / "support-bot"


@pytest.fixture
def example(tmp_path: Path) -> Path:
    root = tmp_path / "support-bot"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".cesync"))
    return root


def links(text: str) -> set[tuple[str, str, str]]:
    data = json.loads(text)
    return {(x["source"], x["target"], x["field"]) for x in data["links"]}


def test_the_example_app_as_mermaid_parses_and_draws_every_reference(example: Path) -> None:
    done = cesync("graph", "--env", "local", cwd=example)
    assert done.returncode == 0, done.stderr
    [parsed] = mermaid_parse([done.stdout])
    assert parsed["ok"], parsed
    texts = {n["text"] for n in parsed["nodes"]}
    assert {"app", "agent support", "agent billing", "tool refund-policy", "deployment web", "evaluation refund-full"} <= texts
    drawn = {(e["start"], e["end"], e["text"]) for e in parsed["edges"]}
    by_text = {n["text"]: n["id"] for n in parsed["nodes"]}
    assert (by_text["app"], by_text["agent support"], "rootAgent") in drawn
    assert (by_text["deployment web"], by_text["app"], "serves") in drawn
    assert (by_text["agent support"], by_text["agent billing"], "childAgents, transferRules") in drawn


def test_json_holds_the_fields_and_focus_keeps_the_neighbourhood(example: Path) -> None:
    whole = cesync("graph", "--env", "local", "--format", "json", cwd=example)
    assert ("agent/billing", "tool/refund-policy", "tools") in links(whole.stdout)
    near = cesync("graph", "--env", "local", "--format", "json", "--focus", "tools/order-status", "--depth", "1", cwd=example)
    assert near.returncode == 0, near.stderr
    nodes = {(n["kind"], n["id"]) for n in json.loads(near.stdout)["nodes"]}
    # what uses order-status directly (the root agent, the widget that reads it), nothing further
    assert nodes == {("tool", "order-status"), ("agent", "support"), ("tool", "order-card")}
    assert {n.get("mark") for n in json.loads(near.stdout)["nodes"] if n["id"] == "order-status"} == {"focus"}


def test_dot_and_the_cap(example: Path) -> None:
    done = cesync("graph", "--env", "local", "--format", "dot", "--max-nodes", "5", cwd=example)
    assert done.returncode == 0
    assert done.stdout.startswith("digraph app {") and "and 18 more resources" in done.stdout
    assert "18 of 23 resources not drawn; --max-nodes 0 draws all" in done.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["--focus", "tools/refund-polcy"],
            "unknown --focus 'tools/refund-polcy' names no",
        ),
        (["--focus", "tools/refund-polcy"], "did you mean 'tools/refund-policy'?"),
        (["--depth", "2"], "--depth goes with --focus"),
        (["--env", "nope"], "nope"),
        (["--format", "svg"], "'svg' is not one of"),
    ],
)
def test_mistakes_are_one_message_and_exit_1(example: Path, args: list[str], said: str) -> None:
    done = cesync("graph", *([] if "--env" in args else ["--env", "local"]), *args, cwd=example)
    assert done.returncode == 1
    assert said in done.stderr
    assert "Traceback" not in done.stderr


def test_live_draws_the_app_as_it_runs(tmp_path: Path) -> None:
    root = make_repo(
        tmp_path,
        {
            "agents/front.yaml": "displayName: Front\ninstruction: Greet.\nllmAgent: {}\ntools:\n  - {ref: tools/greet}\n",
            "app.yaml": "displayName: A\nrootAgent: {ref: agents/front}\n",
        },
    )
    applied = cesync("apply", "--env", "local", "--auto-approve", cwd=root)
    assert applied.returncode == 0, applied.stderr
    (root / "agents" / "front.yaml").write_text("displayName: Front\ninstruction: Greet.\nllmAgent: {}\n")
    offline = links(cesync("graph", "--format", "json", cwd=root).stdout)
    live = links(cesync("graph", "--live", "--format", "json", cwd=root).stdout)
    assert ("agent/front", "tool/greet", "tools") in live  # the app still holds the reference
    assert ("agent/front", "tool/greet", "tools") not in offline  # the repo no longer does
    assert ("app/app", "agent/front", "rootAgent") in live & offline


def test_live_of_an_app_that_does_not_exist_says_so_and_nothing_of_writing(tmp_path: Path) -> None:
    """graph writes no file: its error must not say 'nothing was written', as pull's and export's do."""
    root = make_repo(tmp_path, {})
    done = cesync("graph", "--live", cwd=root)
    assert done.returncode == 1
    assert "does not exist (check project, location and app)" in done.stderr
    assert "written" not in done.stderr and "Traceback" not in done.stderr


def test_a_plan_of_a_changed_tool_shows_the_agents_deployments_and_evaluations_it_touches(example: Path) -> None:
    from tests.render.test_graph import fences

    assert cesync("apply", "--env", "local", "--auto-approve", cwd=example).returncode == 0
    code = example / "code" / "refund_policy.py"
    code.write_text(code.read_text() + "\n# a change\n")
    done = cesync("plan", "--env", "local", "--format", "markdown", cwd=example)
    assert done.returncode == 0, done.stderr
    [picture] = fences(done.stdout)
    [parsed] = mermaid_parse([picture])
    classes = {n["text"]: n["classes"] for n in parsed["nodes"]}
    assert classes["tool refund-policy"] == ["update"]
    for reached in (
        "agent billing",
        "agent support",
        "app",
        "deployment web",
        "evaluation refund-full",
        "example refund-question",
    ):
        assert classes[reached] == ["affected"], reached
    assert "tool order-status" not in classes  # the root agent's other tools are not touched
    text = cesync("plan", "--env", "local", cwd=example).stdout
    assert "Touches, through references: 1 tool, 1 guardrail, 2 agents, 1 app, 1 example, 1 deployment, 3 evaluations" in text
