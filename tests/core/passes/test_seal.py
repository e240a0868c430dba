"""The seal pass binds the plan under the key: every change's body hashed, the whole file sealed,
and an edit of anything in it breaks the seal."""

from __future__ import annotations

from dataclasses import replace

from cesync.core.passes import SealInput
from cesync.core.planbuild import run_passes
from cesync.core.planseal import seal_matches

from .data import given, remote_tool, tool

KEY = b"k" * 32


def test_a_sealed_plan_matches_and_an_edited_one_does_not() -> None:
    g = given([tool("t", "new")], [remote_tool("t")], key=KEY, seal=SealInput(salt="00", key_source="none", endpoint="http://x"))
    plan = run_passes(g)
    assert plan.seal and plan.endpoint == "http://x" and all(c.body_hash for c in plan.changes)
    assert seal_matches(plan, KEY, str)
    assert not seal_matches(replace(plan, endpoint="http://y"), KEY, str)
    assert not seal_matches(plan, b"other" * 8, str)


def test_an_unsealed_plan_has_no_seal() -> None:
    assert run_passes(given([tool("t")], [])).seal == ""
