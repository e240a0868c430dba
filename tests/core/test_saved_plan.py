"""A saved plan can only narrow, never widen: every tampering is refused before any write.

The setup: the example applied to an emulator, then two tools edited, one tool removed
from the repo (so the app has an unmanaged tool), one tool added, and a plan saved with
prune. Every test edits that plan file as an attacker with write access to it would.
"""

from __future__ import annotations

import asyncio
import copy
import json
import shutil
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
from cesync.emulator import EmbeddedTransport
from cesync.errors import CesyncError, PlanFileError
from cesync.pipeline.context import Context, open_context
from cesync.pipeline.planning import make_plan
from cesync.pipeline.saved import narrow_saved
from tests.conftest import EXAMPLES
from tests.helpers import cesync

OTHER_APP = "projects/local/locations/us/apps/other-bot"


def _setup(tmp: Path) -> tuple[Path, EmbeddedTransport]:
    root = tmp / "support-bot"
    shutil.copytree(EXAMPLES / "support-bot", root, ignore=shutil.ignore_patterns(".cesync"))
    transport = EmbeddedTransport(apps=[OTHER_APP])  # the example's app is created by its first apply
    asyncio.run(_apply_all(root, transport))
    for f in ("web-search", "manuals"):
        p = root / "tools" / f"{f}.yaml"
        p.write_text(p.read_text().replace("description: ", "description: v2 "))
    (root / "tools" / "faq-search.yaml").unlink()  # now unmanaged in the app
    (root / "tools" / "hello.yaml").write_text("clientFunction:\n  name: hello\n  description: Say hello.\n")
    return root, transport


async def _apply_all(root: Path, transport: httpx.AsyncBaseTransport) -> None:
    from cesync.pipeline.apply import apply_plan
    from cesync.pipeline.recording import record_apply

    ctx = open_context(root, "local", scrubber=Scrubber())
    async with CesClient("http://emu", transport=transport) as c:
        plan = await make_plan(ctx, c)
        result = await apply_plan(c, plan)
        assert result.ok
        await record_apply(c, ctx, plan, result)  # as apply does: what it made is cesync's to prune
        # another app in the same project, with a tool an attacker could point a change at
        await c.create(OTHER_APP, "tools", "victim", {"clientFunction": {"name": "victim"}})


def _ctx(root: Path) -> Context:
    return open_context(root, "local", scrubber=Scrubber())


async def _plan(root: Path, transport: httpx.AsyncBaseTransport, prune: bool = True) -> Plan:
    ctx = _ctx(root)
    async with CesClient("http://emu", transport=transport) as c:
        return await make_plan(ctx, c, prune=prune)


_CONTEXTS: dict[Path, Context] = {}


async def _narrow(
    root: Path, transport: httpx.AsyncBaseTransport, text: str, prune: bool | None = None, targets: tuple[str, ...] = ()
) -> Plan:
    ctx = _CONTEXTS.get(root) or _CONTEXTS.setdefault(root, _ctx(root))  # the repo does not change: read it once
    async with CesClient("http://emu", transport=transport) as c:
        return await narrow_saved(ctx, c, Plan.from_json(text), prune=prune, targets=targets)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, EmbeddedTransport, dict[str, Any]]:
    root, transport = _setup(tmp_path_factory.mktemp("saved"))
    plan = asyncio.run(_plan(root, transport))
    assert plan.counts() == {"create": 1, "update": 2, "delete": 1}, plan.counts()
    return root, transport, json.loads(plan.to_json())


def resealed(data: dict[str, Any], key: bytes = b"") -> dict[str, Any]:
    """The file sealed again by its editor: without CESYNC_PLAN_KEY (or sensitive values) the seal is
    a checksum anyone can recompute, and what follows must still hold."""
    plan = Plan.from_json(json.dumps(data))
    return {**data, "seal": seal_of(plan, scrub=str, key=binding_key({}, plan.sensitive.salt, key))}


def _run(
    world: tuple[Path, EmbeddedTransport, dict[str, Any]],
    data: dict[str, Any],
    prune: bool | None = None,
    targets: tuple[str, ...] = (),
    reseal: bool = True,
) -> Plan:
    """apply of the edited file; by default resealed, so that what is checked is what narrow checks."""
    root, transport, _ = world
    text = json.dumps(resealed(data) if reseal else data)
    return asyncio.run(_narrow(root, transport, text, prune, targets))


def _executed(plan: Plan) -> list[tuple[Any, ...]]:
    return [(c.action, c.name, c.etag, json.dumps(c.body, sort_keys=True), c.update_mask) for c in plan.changes]


def test_untouched_plan_runs_as_made(world: tuple[Path, EmbeddedTransport, dict[str, Any]]) -> None:
    narrowed = _run(world, world[2])
    assert [c.key for c in narrowed.changes] == [c["kind"] + "/" + c["id"] for c in world[2]["changes"]]


def test_removing_changes_narrows(world: tuple[Path, EmbeddedTransport, dict[str, Any]]) -> None:
    data = copy.deepcopy(world[2])
    data["changes"] = [c for c in data["changes"] if c["action"] == "update"][:1]
    with pytest.raises(PlanFileError, match="seal does not match"):  # narrow with apply --target instead
        _run(world, data, reseal=False)
    narrowed = _run(world, data)
    assert [c.key for c in narrowed.changes] == [data["changes"][0]["kind"] + "/" + data["changes"][0]["id"]]


# --- --target: a targeted plan is a narrower plan; apply --target narrows a saved plan further ---


def test_targeted_plan_is_accepted_and_stays_partial(world: tuple[Path, EmbeddedTransport, dict[str, Any]]) -> None:
    root, transport, _ = world

    async def targeted() -> Plan:
        async with CesClient("http://emu", transport=transport) as c:
            return await make_plan(_ctx(root), c, prune=True, targets=["web-search"])

    made = json.loads(asyncio.run(targeted()).to_json())
    assert made["targets"] == ["tool/web-search"]
    narrowed = _run(world, made)
    assert [c.key for c in narrowed.changes] == ["tool/web-search"] and narrowed.targets == ("tool/web-search",)
    assert _run(world, made, targets=("hello",)).changes == ()  # a target never widens a saved plan


def test_apply_target_narrows_a_saved_plan_further(world: tuple[Path, EmbeddedTransport, dict[str, Any]]) -> None:
    narrowed = _run(world, world[2], targets=("tools/manuals", "hello"))
    assert sorted(c.key for c in narrowed.changes) == ["tool/hello", "tool/manuals"]
    assert narrowed.targets == ("tool/hello", "tool/manuals")
    with pytest.raises(CesyncError, match="unknown --target 'tools/manual'"):
        _run(world, world[2], targets=("tools/manual",))


@pytest.mark.parametrize("targets", [[], ["tool/hello"], ["tool/victim"], ["tool/hello", "tool/web-search", "toolset/x"]])
def test_tampered_targets_never_widen(world: tuple[Path, EmbeddedTransport, dict[str, Any]], targets: list[str]) -> None:
    data = copy.deepcopy(world[2])
    data["changes"] = [c for c in data["changes"] if c["action"] == "update"]
    data["targets"] = targets
    listed = {c["kind"] + "/" + c["id"] for c in data["changes"]}
    with pytest.raises(PlanFileError, match="seal does not match"):
        _run(world, data, reseal=False)
    if targets and not listed <= set(targets):
        with pytest.raises(PlanFileError, match="outside the plan's targets"):
            _run(world, data)
        return
    assert {c.key for c in _run(world, data).changes} == listed


def _change(data: dict[str, Any], action: str) -> dict[str, Any]:
    return next(c for c in data["changes"] if c["action"] == action)


def test_edited_body_is_refused(world: tuple[Path, EmbeddedTransport, dict[str, Any]]) -> None:
    data = copy.deepcopy(world[2])
    next(c for c in data["changes"] if c["id"] == "web-search")["body"]["googleSearchTool"]["description"] = "attacker's"
    with pytest.raises(PlanFileError, match="body differ"):
        _run(world, data)


def test_appended_delete_of_an_unmanaged_tool_is_refused(world: tuple[Path, EmbeddedTransport, dict[str, Any]]) -> None:
    root, transport, _ = world
    made_without_prune = json.loads(asyncio.run(_plan(root, transport, prune=False)).to_json())
    assert not any(c["action"] == "delete" for c in made_without_prune["changes"])
    data = copy.deepcopy(made_without_prune)
    data["changes"].append(copy.deepcopy(_change(world[2], "delete")))
    with pytest.raises(PlanFileError, match="made without prune, yet it deletes"):
        _run(world, data)
    with pytest.raises(PlanFileError, match="made without prune, yet it deletes"):
        _run(world, data, prune=True)  # apply --prune does not allow it either
    data["prune"] = True  # flipping prune too: refused by a keyed seal (see test_plan_binding), and by --no-prune
    with pytest.raises(PlanFileError, match="prune is off for this apply"):
        _run(world, data, prune=False)


def test_change_pointed_at_another_apps_tool_is_refused(world: tuple[Path, EmbeddedTransport, dict[str, Any]]) -> None:
    transport = world[1]

    async def victim() -> dict[str, Any]:
        async with CesClient("http://emu", transport=transport) as c:
            return await c.get(f"{OTHER_APP}/tools/victim")

    other = asyncio.run(victim())
    data = copy.deepcopy(world[2])
    change = _change(data, "delete")
    change["name"], change["etag"] = other["name"], other["etag"]
    with pytest.raises(PlanFileError, match=r"not tool .* of the plan's app"):
        _run(world, data)
    data = copy.deepcopy(world[2])
    data["app"] = OTHER_APP
    with pytest.raises(PlanFileError, match="the plan is for"):
        _run(world, data)


@pytest.mark.parametrize("field, value", [("managed", 1000), ("managed", 0)])
def test_flipped_managed_count_is_refused(world: tuple[Path, EmbeddedTransport, dict[str, Any]], field: str, value: Any) -> None:
    data = copy.deepcopy(world[2])
    data[field] = value
    with pytest.raises(PlanFileError, match="the repo defines"):
        _run(world, data)


def test_other_endpoint_is_refused(world: tuple[Path, EmbeddedTransport, dict[str, Any]]) -> None:
    data = copy.deepcopy(world[2])
    assert data["endpoint"] == "embedded"
    data["endpoint"] = "http://127.0.0.1:9"
    with pytest.raises(PlanFileError, match=r"made against http://127\.0\.0\.1:9"):
        _run(world, data)


# --- generated tampering: pick a change and a field, mutate it ---------------------------------

CHANGE_FIELDS = [
    "kind",
    "id",
    "action",
    "name",
    "etag",
    "before",
    "after",
    "body",
    "fields",
    "update_mask",
    "depends_on",
    "level",
    "note",
]


def _mutations(value: Any) -> st.SearchStrategy[Any]:
    """Values different from value, of the same shape where possible (and some of another)."""
    other_app = st.just(OTHER_APP + "/tools/victim")
    if isinstance(value, bool):
        return st.just(not value)
    if isinstance(value, int):
        return st.integers(-3, 1000).filter(lambda v: v != value)
    if isinstance(value, str):
        return st.one_of(st.text(max_size=12), other_app, st.sampled_from([value + "x", value.upper() + "/.."])).filter(
            lambda v: v != value
        )
    if isinstance(value, list):
        return st.one_of(
            st.just(value[:-1]) if value else st.just(["x"]),
            st.just([*value, OTHER_APP + "/tools/victim"]),
            st.just(list(reversed(value))),
        ).filter(lambda v: v != value)
    if isinstance(value, dict):
        keys = sorted(value)
        return st.one_of(
            st.just({**value, "description": "injected"}),
            st.just({k: v for k, v in value.items() if k != keys[0]}) if keys else st.just({"x": 1}),
            st.just({**value, "timeout": "1s"}),
        ).filter(lambda v: v != value)
    return st.one_of(st.just({"clientFunction": {"name": "x"}}), st.just("x"))


@st.composite
def tampered(draw: st.DrawFn, original: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    data = copy.deepcopy(original)
    i = draw(st.integers(0, len(data["changes"]) - 1))
    field = draw(st.sampled_from(CHANGE_FIELDS))
    value = data["changes"][i][field]
    if field in ("kind", "action"):
        options = {"kind": ["tool", "toolset"], "action": ["create", "update", "delete"]}[field]
        new = draw(st.sampled_from([o for o in options if o != value]))
    else:
        new = draw(_mutations(value))
    data["changes"][i][field] = new
    return f"change {i} {field}", data


@pytest.mark.slow  # saved plans applied through the emulator
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_tampered_change_is_refused(world: tuple[Path, EmbeddedTransport, dict[str, Any]], data: st.DataObject) -> None:
    what, plan = data.draw(tampered(world[2]))
    with pytest.raises(PlanFileError) as info:
        _run(world, plan)
    assert "Traceback" not in str(info.value), what


PLAN_FIELDS = {
    "managed": st.integers(0, 1000),
    "prune": st.booleans(),
    "endpoint": st.sampled_from(["", "embedded", "http://127.0.0.1:9", "https://evil.example"]),
    "environment": st.sampled_from(["local", "prod", "dev"]),
    "app": st.sampled_from([OTHER_APP, "projects/local/locations/us/apps/support-bot"]),
    "digest": st.sampled_from(["sha256:" + "0" * 64, "sha256:" + "f" * 64]),
}


@pytest.mark.slow  # saved plans applied through the emulator
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_tampered_plan_fields_never_widen(world: tuple[Path, EmbeddedTransport, dict[str, Any]], data: st.DataObject) -> None:
    """A plan-level field edited: refused, or exactly the original changes run."""
    original = _executed(_run(world, world[2]))
    plan = copy.deepcopy(world[2])
    field = data.draw(st.sampled_from(sorted(PLAN_FIELDS)))
    plan[field] = data.draw(PLAN_FIELDS[field])
    try:
        narrowed = _run(world, plan)
    except PlanFileError:
        return
    assert _executed(narrowed) == original, field


# --- malformed files: what and where, never a traceback -----------------------------------------


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d["changes"][0].update(action="replace"), "changes[0].action: Input should be 'create', 'update' or 'delete'"),
        (lambda d: d["changes"][1].pop("kind"), "changes[1].kind: Field required"),
        (lambda d: d["changes"][0].update(update_mask="a,b"), "changes[0].update_mask: Input should be a valid list"),
        (lambda d: d.update(managed=-1), "managed: Input should be greater than or equal to 0"),
        (lambda d: d.update(digest="md5:1"), "digest: String should match pattern"),
        (lambda d: d.update(extra=1), "extra: Extra inputs are not permitted"),
        (lambda d: d.update(changes={}), "changes: Input should be a valid list"),
    ],
)
def test_malformed_plan_file_is_a_clear_error(
    world: tuple[Path, EmbeddedTransport, dict[str, Any]], tmp_path: Path, edit: Any, message: str
) -> None:
    data = copy.deepcopy(world[2])
    edit(data)
    with pytest.raises(PlanFileError, match="is not a valid cesync plan") as info:
        Plan.from_json(json.dumps(data), "plan.json")
    assert message in str(info.value)
    if "action" in message:  # and through the CLI, once
        path = tmp_path / "plan.json"
        path.write_text(json.dumps(data))
        result = cesync("show", str(path))
        assert result.returncode == 1 and message in result.stderr and "Traceback" not in result.stderr


def test_cli_refuses_a_tampered_plan_and_writes_nothing(tmp_path: Path) -> None:
    """End to end through the CLI, the embedded state file on disk must be unchanged byte for byte."""
    root = tmp_path / "support-bot"
    shutil.copytree(EXAMPLES / "support-bot", root, ignore=shutil.ignore_patterns(".cesync"))
    assert cesync("apply", "--dir", str(root), "--env", "local", "--auto-approve").returncode == 0
    p = root / "tools" / "web-search.yaml"
    p.write_text(p.read_text().replace("description: ", "description: v2 "))
    planfile = tmp_path / "plan.json"
    made = cesync("plan", "--dir", str(root), "--env", "local", "--out", str(planfile))
    assert made.returncode == 0, made.stderr
    data = json.loads(planfile.read_text())
    data["changes"][0]["body"]["googleSearchTool"]["description"] = "attacker's text"
    planfile.write_text(json.dumps(data))
    state = (root / ".cesync" / "local.sqlite").read_bytes()
    result = cesync("apply", str(planfile), "--dir", str(root), "--auto-approve")
    assert result.returncode == 1 and "seal does not match" in result.stderr and "Traceback" not in result.stderr
    assert (root / ".cesync" / "local.sqlite").read_bytes() == state


def test_a_saved_plan_that_creates_the_app_applies(tmp_path: Path) -> None:
    """Every change of a new app depends on the app itself: that is inside the plan's app, not outside it."""
    from cesync.emulator.server import BackgroundServer

    root = tmp_path / "support-bot"
    shutil.copytree(EXAMPLES / "support-bot", root, ignore=shutil.ignore_patterns(".cesync"))
    planfile = tmp_path / "plan.json"
    with BackgroundServer(auto_create_apps=False, operation_delay=0.05) as s:
        common = ("--dir", str(root), "--env", "local", "--endpoint", s.url)
        made = cesync("plan", *common, "--out", str(planfile))
        assert made.returncode == 0, made.stderr
        assert json.loads(planfile.read_text())["changes"][0]["action"] == "create"  # the app first
        applied = cesync("apply", str(planfile), *common, "--auto-approve")
        assert applied.returncode == 0, applied.stderr
        assert "23 created" in applied.stdout
        assert cesync("plan", *common, "--detailed-exitcode").returncode == 0
