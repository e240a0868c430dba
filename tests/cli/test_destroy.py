"""Tear-down (issue #38 item 5): plan --destroy, apply --destroy and cesync destroy delete what cesync
owns in the app through apply's own path: confirmation, the mass-change guard, the saved plan, the record."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cesync.emulator.server import BackgroundServer
from tests.helpers import FIXTURES, cesync

APP = "projects/p/locations/us/apps/pull-app"


def _repo(tmp: Path, guard: bool = True) -> Path:
    root = tmp / "repo"
    shutil.copytree(FIXTURES / "pull", root)
    if guard:  # the guard at its smallest, so that a tear-down of six resources meets it
        config = root / "cesync.yaml"
        config.write_text(config.read_text() + "safety: {minResources: 1}\n")
    return root


def _names(url: str, collection: str) -> set[str]:
    listed = httpx.get(f"{url}/v1/{APP}/{collection}").json()
    return {r["name"].rsplit("/", 1)[-1] for r in listed.get(collection, [])}


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(by_hand=st.lists(st.from_regex(r"hand-[a-z]{1,6}", fullmatch=True), unique=True, max_size=2))
def test_a_saved_tear_down_deletes_what_cesync_owns_and_keeps_the_rest(
    tmp_path_factory: pytest.TempPathFactory, by_hand: list[str]
) -> None:
    tmp = tmp_path_factory.mktemp("destroy")
    root = _repo(tmp)
    with BackgroundServer(auto_create_apps=True) as emulator:
        common = ["--dir", str(root), "--endpoint", emulator.url]
        assert cesync("apply", *common, "--auto-approve").returncode == 0
        for rid in by_hand:  # made in the console: not cesync's
            made = httpx.post(f"{emulator.url}/v1/{APP}/tools", params={"toolId": rid}, json={"clientFunction": {"name": rid}})
            assert made.status_code == 200, made.text
        owned = {(k, i) for k in ("tools", "toolsets") for i in _names(emulator.url, k)} - {("tools", h) for h in by_hand}
        saved = tmp / "destroy.json"
        planned = cesync("plan", *common, "--destroy", "--out", str(saved), "--format", "json")
        assert planned.returncode == 0, planned.stderr
        plan = json.loads(planned.stdout)
        deletes = {(c["kind"] + "s", c["id"]) for c in plan["changes"]}
        assert plan["destroy"] is True and {c["action"] for c in plan["changes"]} == {"delete"}
        # the derived tools of a toolset go with it: what the plan names is the repo's, not the hand-made
        assert deletes and deletes <= owned and not deletes & {("tools", h) for h in by_hand}
        assert "a tear-down deletes" in plan["refused"]  # the mass-change guard, as for any apply
        guarded = cesync("apply", str(saved), *common, "--auto-approve")
        assert guarded.returncode == 1 and "--allow-mass-change" in guarded.stderr
        done = cesync("apply", str(saved), *common, "--auto-approve", "--allow-mass-change")
        assert done.returncode == 0, done.stdout + done.stderr
        assert _names(emulator.url, "toolsets") == set() and _names(emulator.url, "tools") >= set(by_hand)
        assert not {("tools", i) for i in _names(emulator.url, "tools")} & deletes
        assert httpx.get(f"{emulator.url}/v1/{APP}").status_code == 200  # the app itself stays
        again = cesync("plan", *common, "--destroy", "--detailed-exitcode")
        assert again.returncode == 0 and "Tear-down (--destroy)" in again.stdout, again.stdout
        back = cesync("apply", *common, "--auto-approve")  # and the repo can make it all again
        assert back.returncode == 0 and cesync("plan", *common, "--detailed-exitcode").returncode == 0


def test_destroy_asks_as_apply_does_and_removes_references(tmp_path: Path, emulator: BackgroundServer) -> None:
    root = _repo(tmp_path, guard=False)
    common = ["--dir", str(root), "--endpoint", emulator.url]
    assert cesync("apply", *common, "--auto-approve").returncode == 0
    guarded = cesync("destroy", *common, "--auto-approve")
    assert guarded.returncode == 1 and "a tear-down deletes 5 resources" in guarded.stderr
    asked = cesync("destroy", *common, "--allow-mass-change")
    assert asked.returncode == 1 and "no terminal to confirm on" in asked.stderr
    assert _names(emulator.url, "toolsets")  # nothing went
    text = cesync("plan", *common, "--destroy")
    assert "Tear-down (--destroy): every resource cesync owns in the app is deleted; the app itself stays" in text.stdout
    gone = cesync("destroy", *common, "--auto-approve", "--allow-mass-change")
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert _names(emulator.url, "toolsets") == set() and not _names(emulator.url, "tools") & {"greet", "ask", "search"}


def test_destroy_refuses_what_would_not_tear_down(tmp_path: Path, emulator: BackgroundServer) -> None:
    root = _repo(tmp_path, guard=False)
    common = ["--dir", str(root), "--endpoint", emulator.url]
    assert cesync("apply", *common, "--auto-approve").returncode == 0
    no_prune = cesync("plan", *common, "--destroy", "--no-prune")
    assert no_prune.returncode == 1 and "cannot go with --no-prune" in no_prune.stderr
    saved = tmp_path / "plan.json"
    assert cesync("plan", *common, "--out", str(saved)).returncode == 0
    mixed = cesync("apply", str(saved), *common, "--destroy", "--auto-approve")
    assert mixed.returncode == 1 and "not a tear-down" in mixed.stderr


def test_a_tear_down_of_an_app_that_does_not_exist_writes_nothing(tmp_path: Path) -> None:
    """A retired environment already deleted in the console (or never applied): there is nothing of
    cesync's to delete, and no record to write; 'create app version ... NOT_FOUND' and exit 1 was
    the answer."""
    root = _repo(tmp_path)
    with BackgroundServer() as emulator:  # apps are not made on first use: this one does not exist
        done = cesync("destroy", "--dir", str(root), "--endpoint", emulator.url, "--auto-approve")
        assert done.returncode == 0, done.stderr
        assert "NOT_FOUND" not in done.stderr and "Applied record" not in done.stdout
        assert httpx.get(f"{emulator.url}/v1/{APP}").status_code == 404  # not created by the tear-down either
