"""The mass-change guard counts what can lose data: deletes (renames too) at 30%, updates only above 80%."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.core.plan import Plan
from cesync.core.planbuild import build_plan
from cesync.core.safety import safety_refusal
from cesync.repo.config import Safety
from cesync.repo.repo import load_repo
from cesync.repo.scaffold import write_scaffold

P = "projects/p/locations/us/apps/a"


def _tool(i: int, name: str) -> Resource:
    return Resource(KINDS["tool"], f"t{i}", {"name": f"{P}/tools/t{i}", "etag": "e", "clientFunction": {"name": name}})


def plan_of(managed: int, creates: int, updates: int, deletes: int) -> Plan:
    """``managed`` remote tools the repo also defines, of which ``updates`` changed; ``deletes`` more remote
    tools the repo dropped (pruned); ``creates`` new ones."""
    remote = [_tool(i, f"f{i}") for i in range(managed + deletes)]
    desired = [
        Resource(KINDS["tool"], f"t{i}", {"clientFunction": {"name": f"f{i}" if i >= updates else "new"}}) for i in range(managed)
    ]
    desired += [Resource(KINDS["tool"], f"n{i}", {"clientFunction": {"name": f"n{i}"}}) for i in range(creates)]
    return build_plan("e", P, desired, remote, prune=True)


@settings(max_examples=80, deadline=None)
@given(managed=st.integers(1, 40), creates=st.integers(0, 10), data=st.data(), limits=st.tuples(st.just(0.3), st.just(0.8)))
def test_refused_exactly_when_deletes_or_updates_pass_their_share(
    managed: int, creates: int, data: st.DataObject, limits: tuple[float, float]
) -> None:
    updates = data.draw(st.integers(0, managed))
    deletes = data.draw(st.integers(0, 20))
    plan = plan_of(managed, creates, updates, deletes)
    counts = plan.counts()
    assert (counts["create"], counts["update"], counts["delete"]) == (creates, updates, deletes)
    base = managed + deletes  # what cesync manages in the app before the apply
    reason = safety_refusal(plan, limits[0], 10, limits[1])
    expected = base >= 10 and (deletes / base > limits[0] or updates / base > limits[1])
    assert bool(reason) == expected, (managed, creates, updates, deletes, reason)
    if reason:
        assert ("deletes" in reason) == (deletes / base > limits[0]) and "--allow-mass-change" in reason


def test_routine_work_on_a_small_app_is_not_refused() -> None:
    """The week's case: 1 create and 5 updates on a 10-resource app (50% updated) goes through."""
    assert safety_refusal(plan_of(10, 1, 5, 0), 0.3, 10, 0.8) == ""
    assert safety_refusal(plan_of(10, 0, 0, 4), 0.3, 10, 0.8) == ""  # 4 of 14: 29%
    assert "deletes 5 of 15" in safety_refusal(plan_of(10, 0, 0, 5), 0.3, 10, 0.8)


def test_the_share_is_of_what_the_app_had_not_of_what_the_repo_keeps() -> None:
    # 9 of 13 deleted: the repo keeps 4, fewer than minResources, but the app had 13.
    assert "deletes 9 of 13 managed resources (69%" in safety_refusal(plan_of(4, 0, 0, 9), 0.3, 10, 0.8)
    assert "deletes 12 of 13" in safety_refusal(plan_of(1, 0, 0, 12), 0.3, 10, 0.8)


def test_init_shows_the_safety_setting(tmp_path: Path) -> None:
    write_scaffold(tmp_path, "demo")
    text = (tmp_path / "cesync.yaml").read_text()
    assert "safety:\n  maxChangeFraction: 0.3\n  maxUpdateFraction: 0.8\n  minResources: 10\n" in text
    assert load_repo(tmp_path).config.safety == Safety()  # the scaffold shows the defaults as they are
