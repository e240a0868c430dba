"""The emulator replays a golden without a model: expected tool calls run against the real tool
(Python in the sandbox), tool responses are checked against what it answered, and what only a
model decides is reported SKIPPED, never PASS."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cesync.emulator.execute import Executor
from cesync.emulator.golden import replay_golden, subset_differences

APP = "projects/p/locations/us/apps/a"
CODE = """def refund_policy(order_total: float, days_since_delivery: int) -> dict:
    if days_since_delivery > 30:
        return {"eligible": False}
    return {"eligible": True, "refund": order_total - (0 if order_total >= 50 else 5)}
"""
TOOLS: dict[str, dict[str, Any]] = {
    "refund": {"name": f"{APP}/tools/refund", "pythonFunction": {"name": "refund_policy", "pythonCode": CODE}},
    "ui": {"name": f"{APP}/tools/ui", "clientFunction": {"name": "show"}},
}
EXECUTOR = Executor(lambda parent, collection, rid: TOOLS.get(rid) if collection == "tools" else None, lambda parent: TOOLS)


def run_tool(body: dict[str, Any]) -> Any:
    return EXECUTOR.execute(APP, body)


def call(tool: str, **args: Any) -> dict[str, Any]:
    return {"expectation": {"toolCall": {"tool": f"{APP}/tools/{tool}", "args": args}}}


def answer(tool: str, response: dict[str, Any], note: str = "") -> dict[str, Any]:
    return {"expectation": {"toolResponse": {"tool": f"{APP}/tools/{tool}", "response": response}, "note": note}}


def replay(*steps: dict[str, Any], decided: dict[tuple[int, int], tuple[str, str]] | None = None) -> tuple[str, dict[str, Any]]:
    golden = {"turns": [{"steps": [{"userInput": {"text": "can I get a refund?"}}, *steps]}]}
    return asyncio.run(replay_golden(golden, run_tool, decided or {}))


def outcomes(result: dict[str, Any]) -> list[str]:
    return [o["outcome"] for o in result["turnReplayResults"][0]["expectationOutcome"]]


def test_a_tool_call_runs_the_real_tool_and_its_response_is_checked() -> None:
    status, result = replay(call("refund", order_total=80, days_since_delivery=3), answer("refund", {"result": {"refund": 80}}))
    assert status == "PASS" and outcomes(result) == ["PASS", "PASS"]
    turn = result["turnReplayResults"][0]
    observed = turn["expectationOutcome"][1]["observedToolResponse"]["response"]
    assert observed == {"result": {"eligible": True, "refund": 80}}  # what the sandboxed code returned
    assert turn["overallToolInvocationResult"] == {"toolInvocationScore": 1.0, "outcome": "PASS"}
    assert "user: can I get a refund?" in turn["conversation"]


def test_observed_calls_and_responses_name_the_app_they_targeted() -> None:
    """ToolCall/ToolResponse.targetApp (output only, the seeds' page); agentName and parentToolCallId
    are empty for the root agent's top-level calls, so they are left out as proto3 JSON does."""
    _, result = replay(call("refund", order_total=80, days_since_delivery=3), answer("refund", {"result": {"refund": 80}}))
    first, second = result["turnReplayResults"][0]["expectationOutcome"]
    for observed in (first["observedToolCall"], second["observedToolResponse"]):
        assert observed["targetApp"] == APP
        assert "agentName" not in observed and "parentToolCallId" not in observed


def test_a_response_the_tool_no_longer_gives_fails_with_the_difference() -> None:
    status, result = replay(call("refund", order_total=20, days_since_delivery=3), answer("refund", {"result": {"refund": 20}}))
    assert status == "FAIL" and outcomes(result) == ["PASS", "FAIL"]
    assert "response.result.refund: expected 20, got 15" in result["turnReplayResults"][0]["conversation"]


@pytest.mark.parametrize(
    ("step", "why"),
    [
        ({"expectation": {"agentResponse": {"role": "agent", "chunks": [{"text": "Yes"}]}}}, "agentResponse"),
        ({"expectation": {"agentTransfer": {"targetAgent": f"{APP}/agents/billing"}}}, "agentTransfer"),
        ({"expectation": {"updatedVariables": {"tier": "gold"}}}, "updatedVariables"),
        (call("ui"), "clientFunction"),  # a tool the emulator cannot run
        (answer("ui", {"result": {}}), "no toolCall"),  # a response with no call of its tool before it
    ],
    ids=["agent-response", "transfer", "variables", "client-function", "response-without-call"],
)
def test_what_needs_a_model_or_cannot_run_here_is_never_passed(step: dict[str, Any], why: str) -> None:
    status, result = replay(step)
    assert status == "SKIPPED" and outcomes(result) == ["SKIPPED"]
    assert why in result["turnReplayResults"][0]["conversation"]
    status, _ = replay(call("refund", order_total=80, days_since_delivery=1), step)
    assert status == "SKIPPED"  # a passing tool call beside it does not make the golden pass


def test_the_admin_hook_decides_only_what_the_emulator_cannot_judge() -> None:
    agent = {"expectation": {"agentResponse": {"chunks": [{"text": "Yes"}]}}}
    failing = answer("refund", {"result": {"refund": 1}})
    decided = {(0, 1): ("PASS", "a person read it"), (0, 3): ("PASS", "")}
    status, result = replay(agent, call("refund", order_total=80, days_since_delivery=1), failing, decided=decided)
    assert outcomes(result) == ["PASS", "PASS", "FAIL"]  # the tool check at step 3 is not overridden
    assert status == "FAIL"


def test_a_tool_that_does_not_exist_fails_the_call() -> None:
    status, result = replay(call("gone", x=1))
    assert status == "FAIL" and "gone" in result["turnReplayResults"][0]["conversation"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from([0.5, -1.25]) | st.sampled_from(["", "a", "Ada"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
    max_leaves=6,
)


@given(json_values, json_values)
def test_a_value_is_a_subset_of_itself_and_of_anything_it_was_cut_from(value: Any, extra: Any) -> None:
    assert subset_differences(value, value) == []
    if isinstance(value, dict):
        assert subset_differences(value, {**{"zz-extra": extra}, **value}) == []
        for key in value:
            assert subset_differences(value, {k: v for k, v in value.items() if k != key}) != []
