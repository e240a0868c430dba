"""core.affected: the evaluations and tool tests a changed tool, toolset, agent or guardrail puts at risk."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cesync.api.kinds import KINDS, THE_APP
from cesync.api.resource import Resource
from cesync.core.affected import affected, exercised

P = "projects/p/locations/l/apps/a"


def res(kind: str, rid: str, body: dict[str, object]) -> Resource:
    return Resource(KINDS[kind] if kind != "app" else THE_APP, rid, body)


def golden(*tools: str, transfer: str | None = None) -> dict[str, object]:
    steps: list[dict[str, object]] = [{"expectation": {"toolCall": {"tool": f"{P}/tools/{t}", "args": {}}}} for t in tools]
    if transfer:
        steps.append({"agentTransfer": {"targetAgent": f"{P}/agents/{transfer}"}})
    return {"golden": {"turns": [{"steps": steps}]}}


APPLIED = [
    res("app", "app", {"rootAgent": f"{P}/agents/root"}),
    res("agent", "root", {"tools": [f"{P}/tools/lookup"], "guardrails": [f"{P}/guardrails/pii"]}),
    res("agent", "billing", {"tools": [f"{P}/tools/refund"], "guardrails": [f"{P}/guardrails/money"]}),
    res("agent", "idle", {"tools": [f"{P}/tools/unused"]}),
    res("tool", "lookup", {}),
    res("tool", "refund", {}),
    res("evaluation", "refunds", golden("refund")),
    res("evaluation", "handover", golden(transfer="billing")),
    res("evaluation", "scenario", {"scenario": {"task": "x"}}),
]


def test_what_an_evaluation_exercises() -> None:
    uses = exercised(APPLIED, P)
    assert uses["evaluation/refunds"] == {"tool/refund", "agent/billing", "agent/root", "guardrail/money", "guardrail/pii"}
    assert uses["evaluation/handover"] == {"agent/billing", "agent/root", "guardrail/money", "guardrail/pii"}
    assert "evaluation/scenario" not in uses  # no golden: nothing it names


def test_each_change_names_what_it_puts_at_risk() -> None:
    tests = {"tests/t.yaml::refund ok": ["tool/refund"]}
    found = affected(["tool/refund", "agent/idle", "agent/root", "example/e", "guardrail/money"], APPLIED, P, tests)
    assert found == {
        "tool/refund": {"evaluations": ["refunds"], "toolTests": ["tests/t.yaml::refund ok"]},
        "agent/root": {"evaluations": ["handover", "refunds"]},  # every conversation starts at the root agent
        "guardrail/money": {"evaluations": ["handover", "refunds"]},
    }


@settings(max_examples=50)
@given(calls=st.lists(st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=3), max_size=5), changed=st.sampled_from("abcd"))
def test_a_changed_tool_risks_exactly_the_goldens_that_call_it(calls: list[list[str]], changed: str) -> None:
    app = [res("tool", t, {}) for t in "abcd"] + [res("evaluation", f"e{i}", golden(*ts)) for i, ts in enumerate(calls)]
    found = affected([f"tool/{changed}"], app, P).get(f"tool/{changed}", {}).get("evaluations", [])
    assert found == sorted(f"e{i}" for i, ts in enumerate(calls) if changed in ts)


def test_the_walk_follows_the_registry_references_and_stops_at_an_agent() -> None:
    """An agent tool runs its agent; an evaluation expectation is part of the golden; a toolset's holder
    is exercised; an agent reached is exercised with its guardrails, not with the tools it may call."""
    app = [
        res("app", "app", {"rootAgent": f"{P}/agents/root", "guardrails": [f"{P}/guardrails/app-wide"]}),
        res("agent", "root", {"toolsets": [{"toolset": f"{P}/toolsets/crm"}]}),
        res("agent", "helper", {"tools": [f"{P}/tools/other"], "guardrails": [f"{P}/guardrails/g"]}),
        res("tool", "ask-helper", {"agentTool": {"agent": f"{P}/agents/helper"}}),
        res("evaluationExpectation", "polite", {}),
        res(
            "evaluation",
            "e",
            {
                "golden": {
                    "evaluationExpectations": [f"{P}/evaluationExpectations/polite"],
                    "turns": [
                        {
                            "steps": [
                                {"expectation": {"toolCall": {"tool": f"{P}/tools/ask-helper"}}},
                                {"expectation": {"toolCall": {"toolsetTool": {"toolset": f"{P}/toolsets/crm"}}}},
                            ]
                        }
                    ],
                }
            },
        ),
    ]
    assert exercised(app, P)["evaluation/e"] == {
        "tool/ask-helper",
        "agent/helper",
        "guardrail/g",
        "toolset/crm",
        "agent/root",
        "guardrail/app-wide",
        "evaluationExpectation/polite",
    }
    found = affected(["evaluationExpectation/polite", "tool/other", "agent/helper"], app, P)
    assert found == {"evaluationExpectation/polite": {"evaluations": ["e"]}, "agent/helper": {"evaluations": ["e"]}}
