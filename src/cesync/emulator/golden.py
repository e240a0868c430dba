"""Replaying a golden evaluation without a model: what the emulator can judge, and only that.

A golden (v1beta ``Evaluation.golden``) is turns of steps: user input, agent transfers
and expectations. With no LLM there is no agent to answer the user, so the emulator
replays the one part of a golden that needs none: each expected ``toolCall`` is made,
with the golden's own arguments, against the real tool (the executor: Python in the
sandbox, OpenAPI on loopback), and each ``toolResponse`` expectation is compared with
what the tool answered. Everything a model decides (``agentResponse``, ``agentTransfer``,
``updatedVariables``, ``noToolCalls``, mocked responses) is reported SKIPPED, with the
reason in the turn's ``conversation``, and never PASS, unless a test has set its outcome
through the admin hook (``decided``). A result with any such expectation is not PASS.

Field names are v1beta's ``EvaluationResult`` (google-cloud-ces ``types/evaluation.py``):
``goldenResult.turnReplayResults[].expectationOutcome[]`` with ``expectation``,
``observedToolCall`` / ``observedToolResponse``, ``outcome`` and
``toolInvocationResult``; ``overallToolInvocationResult`` per turn. An observed call and
response carry ``targetApp`` (the app its tool is in: the seeds' ToolResponse page, "mirrors
ToolCall.target_app"); ``agentName`` and ``parentToolCallId`` are empty for a call the root
agent makes at the top level, which is every call a replay makes, so proto3 JSON leaves them out. Sources are silent on
how CES compares a tool response: here the expected response is a subset of the answer
(every key it names present and equal, numbers compared by value, a boolean never equal to
a number: core/subset.py, which ``cesync test`` judges with too), which is how a golden
made from a conversation, holding the whole answer, passes against the same answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.subset import Difference
from ..core.subset import subset_differences as differences
from .errors import RpcError

__all__ = ["Decided", "Replay", "replay_golden", "subset_differences"]

RunTool = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]  # an executeTool body -> its answer
# (turn, step) -> (outcome, explanation) set by a test for what the emulator cannot judge
Decided = dict[tuple[int, int], tuple[str, str]]
CANNOT_RUN = ("UNIMPLEMENTED", "FAILED_PRECONDITION")  # the executor's words for "not here" (execute.py)
NO_MODEL = {
    "agentResponse": "the agent's reply comes from a model",
    "agentTransfer": "a transfer is the model's decision",
    "updatedVariables": "variables the agent sets come from a model",
    "mockToolResponse": "a mocked response stands in for a call a model makes",
    "noToolCalls": "whether the agent calls a tool is the model's decision",
}


@dataclass
class Replay:
    """The state of one golden's replay: the answers so far, by call id and by tool."""

    run_tool: RunTool
    decided: Decided
    variables: dict[str, Any] = field(default_factory=dict)
    by_id: dict[str, dict[str, Any]] = field(default_factory=dict)
    by_tool: dict[str, dict[str, Any]] = field(default_factory=dict)
    outcomes: list[str] = field(default_factory=list)  # every judged or unjudged outcome (not the user's skips)


def _tool_key(call: dict[str, Any]) -> str:
    if call.get("tool"):
        return str(call["tool"])
    ref = call.get("toolsetTool") or {}
    return f"{ref.get('toolset', '')}/tools/{ref.get('toolId', '')}"


def _target_app(key: str) -> str | None:
    """The app a call's tool is named in (``projects/P/locations/L/apps/A/...``)."""
    match = re.match(r"^(projects/[^/]+/locations/[^/]+/apps/[^/]+)/", key)
    return match.group(1) if match else None


def _condition(expectation: dict[str, Any]) -> str:
    known = ("toolCall", "toolResponse", *NO_MODEL)
    return next((k for k in known if k in expectation), "")


async def _tool_call(replay: Replay, call: dict[str, Any], lines: list[str]) -> dict[str, Any]:
    body: dict[str, Any] = {"args": call.get("args") or {}, "variables": dict(replay.variables)}
    if call.get("tool"):
        body["tool"] = call["tool"]
    elif call.get("toolsetTool"):
        body["toolsetTool"] = call["toolsetTool"]
    else:
        return _outcome("FAIL", "the toolCall names no tool or toolsetTool", lines)
    key = _tool_key(call)
    try:
        answer = await replay.run_tool(body)
    except RpcError as exc:
        status = "SKIPPED" if exc.status in CANNOT_RUN else "FAIL"
        word = "not evaluated by the emulator" if status == "SKIPPED" else "the call failed"
        return _outcome(status, f"{word}: {key}: {exc.message}", lines)
    response = answer.get("response") if isinstance(answer.get("response"), dict) else {}
    if isinstance(answer.get("variables"), dict):
        replay.variables = dict(answer["variables"])
    observed = {k: v for k, v in call.items() if k in ("id", "tool", "toolsetTool", "args")}
    app = _target_app(key)
    if app:  # the replay's calls are the root agent's, top level: agentName and parentToolCallId are empty
        observed["targetApp"] = app
    replay.by_tool[key] = {**observed, "response": response}
    if call.get("id"):
        replay.by_id[str(call["id"])] = replay.by_tool[key]
    lines.append(f"tool {key}({json.dumps(call.get('args') or {}, sort_keys=True)}) -> {json.dumps(response, sort_keys=True)}")
    explanation = "called with the golden's arguments: the emulator has no model to choose them"
    return {
        "observedToolCall": observed,
        "outcome": "PASS",
        "toolInvocationResult": {"parameterCorrectnessScore": 1.0, "outcome": "PASS", "explanation": explanation},
    }


def _tool_response(replay: Replay, expected: dict[str, Any], lines: list[str]) -> dict[str, Any]:
    key = _tool_key(expected)
    seen = replay.by_id.get(str(expected.get("id"))) if expected.get("id") else None
    seen = seen or replay.by_tool.get(key)
    if seen is None:
        why = f"not evaluated by the emulator: no toolCall of {key} ran before it, and only a model would make one"
        return _outcome("SKIPPED", why, lines)
    observed = {k: v for k, v in seen.items() if k in ("id", "tool", "toolsetTool", "response", "targetApp")}
    differences = subset_differences(expected.get("response") or {}, seen["response"])
    if differences:
        lines.append(f"toolResponse of {key} differs: " + "; ".join(differences))
    return {"observedToolResponse": observed, "outcome": "FAIL" if differences else "PASS"}


def _outcome(outcome: str, why: str, lines: list[str]) -> dict[str, Any]:
    lines.append(why)
    return {"outcome": outcome}


async def _expectation(replay: Replay, expectation: dict[str, Any], where: tuple[int, int], lines: list[str]) -> dict[str, Any]:
    condition = _condition(expectation)
    if expectation.get("skipEvaluation"):
        return {"expectation": expectation, "outcome": "SKIPPED"}  # the user's skip: not counted either way
    if condition == "toolCall":
        found: dict[str, Any] = await _tool_call(replay, expectation["toolCall"], lines)
    elif condition == "toolResponse":
        found = _tool_response(replay, expectation["toolResponse"], lines)
    elif where in replay.decided:  # only what the emulator cannot judge: tool checks are never overridden
        outcome, why = replay.decided[where]
        lines.append(
            f"{condition or 'expectation'}: {outcome} as set by the emulator's admin hook" + (f" ({why})" if why else "")
        )
        found = {"outcome": outcome}
    else:
        reason = NO_MODEL.get(condition, "the emulator does not know this expectation")
        found = _outcome("SKIPPED", f"{condition or 'expectation'}: not evaluated by the emulator ({reason})", lines)
    replay.outcomes.append(found["outcome"])
    return {"expectation": expectation, **found}


async def _turn(replay: Replay, index: int, turn: dict[str, Any]) -> dict[str, Any]:
    lines: list[str] = []
    outcomes: list[dict[str, Any]] = []
    for s, step in enumerate(turn.get("steps") or []):
        if "userInput" in step:
            text = (step["userInput"] or {}).get("text")
            lines.append(f"user: {text}" if text else "user: (input without text)")
        elif "agentTransfer" in step:
            lines.append(f"transfer to {(step['agentTransfer'] or {}).get('targetAgent', '?')}: not replayed (no agent runs)")
        elif "expectation" in step:
            outcomes.append(await _expectation(replay, step["expectation"] or {}, (index, s), lines))
    calls = [o for o in outcomes if "toolCall" in o["expectation"] and o["outcome"] != "SKIPPED"]
    result: dict[str, Any] = {"conversation": "\n".join(lines), "expectationOutcome": outcomes}
    if calls:
        score = sum(o["outcome"] == "PASS" for o in calls) / len(calls)
        result["overallToolInvocationResult"] = {"toolInvocationScore": score, "outcome": "PASS" if score == 1 else "FAIL"}
    return result


async def replay_golden(golden: dict[str, Any], run_tool: RunTool, decided: Decided) -> tuple[str, dict[str, Any]]:
    """(evaluationStatus, goldenResult): FAIL when anything judged failed; SKIPPED when nothing
    failed but something was not judged (or nothing was); PASS only when every expectation was."""
    replay = Replay(run_tool, decided)
    turns = [await _turn(replay, i, t or {}) for i, t in enumerate(golden.get("turns") or [])]
    if "FAIL" in replay.outcomes:
        status = "FAIL"
    elif not replay.outcomes or "SKIPPED" in replay.outcomes or "OUTCOME_UNSPECIFIED" in replay.outcomes:
        status = "SKIPPED"
    else:
        status = "PASS"
    return status, {"turnReplayResults": turns}


def subset_differences(expected: Any, observed: Any, path: str = "response") -> list[str]:
    """Where observed differs from expected, taking expected as a subset (keys it names)."""
    return [_say(d) for d in differences(expected, observed, path)]


def _say(d: Difference) -> str:
    if d.kind == "mapping":
        return f"{d.path}: expected an object, got {_short(d.actual)}"
    if d.kind == "missing":
        return f"{d.path}: missing (expected {_short(d.expected)})"
    return f"{d.path}: expected {_short(d.expected)}, got {_short(d.actual)}"  # a list or a value; no $regex here


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."
