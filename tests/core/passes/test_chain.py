"""The chain as a whole (core/planbuild.py): every pass is pure (the input is left as it was, and
the same input gives the same plan), and a pass added to the chain sees the plan as it stands."""

from __future__ import annotations

import copy
from dataclasses import replace

from hypothesis import given as hypothesis_given
from hypothesis import settings
from hypothesis import strategies as st

from cesync.core.passes import PlanInput, SafetyLimits
from cesync.core.plan import Plan
from cesync.core.planbuild import PASSES, run_passes

from .data import given, remote_tool, tool

IDS = st.sets(st.sampled_from([f"t{i}" for i in range(6)]), max_size=6)


@settings(max_examples=40, deadline=None)
@hypothesis_given(repo=IDS, app=IDS, prune=st.booleans())
def test_the_chain_is_pure(repo: set[str], app: set[str], prune: bool) -> None:
    g = given(
        [tool(i, "new") for i in sorted(repo)],
        [remote_tool(i) for i in sorted(app)],
        prune=prune,
        sensitive={("tool", i): [("clientFunction", "name")] for i in sorted(repo)},
        safety=SafetyLimits(0.3, 2),
    )
    before = copy.deepcopy((g.desired, g.remote))
    first, second = run_passes(g), run_passes(g)
    assert first == second
    assert (g.desired, g.remote) == before
    assert "new" not in first.to_json()


def test_a_new_pass_runs_where_it_is_put() -> None:
    seen: list[int] = []

    def counting(plan: Plan, given_: PlanInput) -> Plan:
        seen.append(len(plan.changes))
        return replace(plan, refused="counted")

    g = given([tool("a")], [remote_tool("b")], prune=True)
    plan = run_passes(g, (*PASSES[:-2], counting, *PASSES[-2:]))
    assert seen == [2] and plan.refused == "counted"
