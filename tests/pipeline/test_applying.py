"""apply's decisions without the command line (pipeline/applying.py), against the emulator: what runs,
what is refused before any write, what is recorded, what the report says."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from cesync.client import CesClient, RetryPolicy
from cesync.core.plan import Plan
from cesync.core.scrubber import Scrubber
from cesync.emulator import EmbeddedTransport
from cesync.errors import CesyncError, UnsafePlanError
from cesync.pipeline.applying import Applied, ApplyOptions, QuietHooks, apply_env, check_saved_flags
from cesync.pipeline.context import open_context
from cesync.sync.remote import read_remote
from tests.helpers import make_repo

FAST = RetryPolicy(attempts=5, initial=0.001, maximum=0.01)
PARENT = "projects/p/locations/us/apps/a"


def _tools(n: int) -> dict[str, str]:
    return {f"tools/t{i}.yaml": f"clientFunction:\n  name: f{i}\n" for i in range(n)}


class Refusing(QuietHooks):
    def confirm(self, plan: Plan) -> None:
        raise CesyncError("apply cancelled; nothing was changed")


async def _apply(root: Path, transport: EmbeddedTransport, options: ApplyOptions, hooks: QuietHooks) -> Applied:
    async with CesClient("http://emu", transport=transport, retry=FAST) as client:
        return await apply_env(open_context(root, "local", scrubber=Scrubber()), client, None, options, hooks)


async def _names(transport: EmbeddedTransport) -> set[str]:
    async with CesClient("http://emu", transport=transport, retry=FAST) as client:
        return {r.key[1] for r in await read_remote(client, PARENT) if not r.kind.singleton}


def test_an_apply_writes_and_records_and_the_next_has_nothing_to_do(tmp_path: Path) -> None:
    root, transport = make_repo(tmp_path, _tools(3)), EmbeddedTransport()
    hooks = QuietHooks()
    first = asyncio.run(_apply(root, transport, ApplyOptions(snapshot=True), hooks))
    assert first.changed and first.result.ok and first.result.record
    assert hooks.lines[0].startswith("Snapshot: none (the app does not exist yet")
    assert hooks.lines[-1].startswith("Applied record: version ")
    later = QuietHooks()
    again = asyncio.run(_apply(root, transport, ApplyOptions(snapshot=True), later))
    assert not again.changed and again.result.record == ""  # the record still says what the app is
    assert later.lines == ["No changes: no version created (--snapshot marks applies that changed the app)."]
    assert asyncio.run(_names(transport)) == {"greet", "t0", "t1", "t2"}


@pytest.mark.parametrize("allow", [False, True])
def test_the_mass_change_guard_refuses_before_any_write(tmp_path: Path, allow: bool) -> None:
    root, transport = make_repo(tmp_path, _tools(12)), EmbeddedTransport()
    asyncio.run(_apply(root, transport, ApplyOptions(), QuietHooks()))
    for i in range(12):
        (root / "tools" / f"t{i}.yaml").unlink()
    run = _apply(root, transport, ApplyOptions(prune=True, allow_mass_change=allow), QuietHooks())
    if allow:
        assert asyncio.run(run).result.counts()["deleted"] == 12
        assert asyncio.run(_names(transport)) == {"greet"}
    else:
        with pytest.raises(UnsafePlanError, match="deletes 12 of 13"):
            asyncio.run(run)
        assert len(asyncio.run(_names(transport))) == 13


def test_a_refused_question_writes_nothing(tmp_path: Path) -> None:
    root, transport = make_repo(tmp_path, _tools(2)), EmbeddedTransport()
    with pytest.raises(CesyncError, match="cancelled"):
        asyncio.run(_apply(root, transport, ApplyOptions(), Refusing()))
    assert asyncio.run(_names(transport)) == set()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (ApplyOptions(labels=("ok",)), "--label"),
        (ApplyOptions(resend_input_only=True), "--resend-input-only"),
    ],
)
def test_what_a_saved_plan_fixes_cannot_change_at_apply(options: ApplyOptions, message: str) -> None:
    with pytest.raises(CesyncError, match=message):
        check_saved_flags(Plan(environment="local", app=PARENT, digest=""), options)


@pytest.mark.parametrize("allow", [False, True])
def test_a_rule_a_pass_adds_stops_apply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, allow: bool) -> None:
    """A new pass in the chain (docs/architecture.md, "Adding a plan rule") that refuses a plan
    stops apply before any write, as the mass-change guard does, unless --allow-mass-change."""
    from dataclasses import replace

    from cesync.core import planbuild
    from cesync.core.passes import PlanInput

    def no_new_tools(plan: Plan, given: PlanInput) -> Plan:
        made = [c.id for c in plan.changes if c.kind.name == "tool" and c.action == "create"]
        return replace(plan, refused=f"creates tool {', '.join(made)}") if made else plan

    monkeypatch.setattr(planbuild, "PASSES", (*planbuild.PASSES[:-1], no_new_tools, planbuild.PASSES[-1]))
    root, transport = make_repo(tmp_path, _tools(1)), EmbeddedTransport()
    run = _apply(root, transport, ApplyOptions(allow_mass_change=allow), QuietHooks())
    if allow:
        assert asyncio.run(run).result.ok
        assert asyncio.run(_names(transport)) == {"greet", "t0"}
    else:
        with pytest.raises(UnsafePlanError, match="creates tool greet, t0"):
            asyncio.run(run)
        assert asyncio.run(_names(transport)) == set()
