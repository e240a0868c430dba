"""--target everywhere, partial plans, the mass-change guard in every format, drift on unmanaged resources."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import httpx
import pytest

from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.core.planbuild import build_plan
from cesync.core.safety import safety_refusal
from cesync.core.targets import resolve_targets
from cesync.emulator.server import BackgroundServer
from cesync.errors import CesyncError
from cesync.render import FORMATS, render
from tests.helpers import FIXTURES
from tests.pipeline.test_pull import cli


def _either(words: list[str]) -> str:
    return f"{', '.join(words[:-1])} or {words[-1]}"


KNOWN = {("tool", "greet"), ("tool", "ask"), ("toolset", "shop"), ("tool", "shop")}


@pytest.mark.parametrize(
    ("given", "selected"),
    [
        (["greet"], {("tool", "greet")}),
        (["tools/greet"], {("tool", "greet")}),
        (["tool/greet"], {("tool", "greet")}),
        (["toolsets/shop"], {("toolset", "shop")}),
        (["toolset/shop"], {("toolset", "shop")}),
        (["shop"], {("tool", "shop"), ("toolset", "shop")}),  # an id both kinds use: both
        (["ask", "toolsets/shop"], {("tool", "ask"), ("toolset", "shop")}),
        ([], None),
    ],
)
def test_targets_accept_every_spelling(given: list[str], selected: set[tuple[str, str]] | None) -> None:
    assert resolve_targets(given, KNOWN) == selected


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("gret", "did you mean 'greet'"),
        ("tools/shopp", "did you mean 'tools/shop' or 'toolsets/shop'"),
        # in the form given, each once, and not every tool for sharing 'tools/'
        ("tools/gret", "of the repo or the app; did you mean 'tools/greet'?"),
        ("gret", "of the repo or the app; did you mean 'greet'?"),
        # Every kind of the registry, in its order: the evaluation kinds too.
        ("toolsets/greet", f"names no {_either(list(KINDS))} of the repo"),
        ("widgets/x", f"the kind must be {_either([f'{k}(s)' for k in KINDS])}"),
    ],
)
def test_unknown_target_is_an_error_with_a_suggestion(given: str, message: str) -> None:
    with pytest.raises(CesyncError, match="unknown --target") as exc:
        resolve_targets([given], KNOWN)
    assert message in str(exc.value)


def _remote(n: int) -> list[Resource]:
    return [
        Resource(KINDS["tool"], f"t{i}", {"name": f"P/tools/t{i}", "etag": "e", "clientFunction": {"name": f"f{i}"}})
        for i in range(n)
    ]


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_shows_when_apply_would_refuse_and_a_partial_plan(fmt: str) -> None:
    remote = _remote(12)
    desired = [Resource(KINDS["tool"], r.id, {"clientFunction": {"name": "changed"}}) for r in remote]
    plan = build_plan("dev", "P", desired, remote)
    reason = safety_refusal(plan, 0.3, 10)
    assert "updates 12 of 12" in reason and "safety.maxUpdateFraction" in reason
    shown = render(dataclasses.replace(plan, refused=reason, targets=("tool/t1",)), fmt)
    if fmt == "json":
        data = json.loads(shown)
        assert data["refused"] == reason and data["targets"] == ["tool/t1"]
    else:
        assert "Apply will refuse this plan" in shown and "12 of 12" in shown
        assert "Partial plan" in shown and "tool/t1" in shown
    quiet = render(build_plan("dev", "P", desired[:1], remote[:1]), fmt)
    assert "will refuse" not in quiet and "Partial" not in quiet and '"refused": "",' in render(plan, "json")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "pull", root)
    return root


def test_plan_apply_export_with_target(repo: Path, tmp_path: Path, emulator: BackgroundServer) -> None:
    url = emulator.url
    for fmt in FORMATS:
        r = cli("plan", "--dir", str(repo), "--endpoint", url, "--target", "tools/greet", "--format", fmt)
        assert r.exit_code == 0, r.output
        assert ("Partial plan" in r.output) if fmt != "json" else json.loads(r.output)["targets"] == ["tool/greet"]
    r = cli("plan", "--dir", str(repo), "--endpoint", url, "--target", "tools/gret")
    assert r.exit_code == 1 and "did you mean 'tools/greet'" in r.output

    r = cli("apply", "--dir", str(repo), "--endpoint", url, "--target", "greet", "--target", "toolsets/shop", "--auto-approve")
    assert r.exit_code == 0, r.output
    names = [
        t["name"].rsplit("/", 1)[-1] for t in httpx.get(f"{url}/v1/projects/p/locations/us/apps/pull-app/tools").json()["tools"]
    ]
    assert sorted(names) == ["greet"]
    r = cli("apply", "--dir", str(repo), "--endpoint", url, "--auto-approve")
    assert r.exit_code == 0, r.output

    out = tmp_path / "exported"
    r = cli("export", "--dir", str(repo), "--endpoint", url, "--out", str(out), "--target", "tools/ask")
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (out / "tools").iterdir()) == ["ask.yaml"] and not (out / "toolsets").exists()


def test_drift_check_can_fail_on_unmanaged(repo: Path, emulator: BackgroundServer) -> None:
    url = emulator.url
    assert cli("apply", "--dir", str(repo), "--endpoint", url, "--auto-approve").exit_code == 0
    drift = ["plan", "--dir", str(repo), "--endpoint", url, "--detailed-exitcode", "--fail-on-unmanaged"]
    assert cli(*drift).exit_code == 0
    made = httpx.post(
        f"{url}/v1/projects/p/locations/us/apps/pull-app/tools",
        params={"toolId": "by-hand"},
        json={"clientFunction": {"name": "h"}},
    )
    assert made.status_code == 200
    assert cli("plan", "--dir", str(repo), "--endpoint", url, "--detailed-exitcode").exit_code == 0  # managed: no changes
    r = cli(*drift)
    assert r.exit_code == 2 and "by-hand" in r.output and "does not define" in r.output
    # alone, the flag fails on what it names (issue #38 finding 5)
    assert cli("plan", "--dir", str(repo), "--endpoint", url, "--fail-on-unmanaged").exit_code == 2


def test_fail_on_drift_alone_fails_on_drift(repo: Path, emulator: BackgroundServer) -> None:
    """`plan --fail-on-drift` without --detailed-exitcode exits 2 on drift, 0 on the repo's own changes."""
    url = emulator.url
    common = ["--dir", str(repo), "--endpoint", url]
    assert cli("apply", *common, "--auto-approve").exit_code == 0
    assert cli("plan", *common, "--fail-on-drift").exit_code == 0
    greet = f"{url}/v1/projects/p/locations/us/apps/pull-app/tools/greet"
    edited = httpx.patch(greet, params={"updateMask": "timeout"}, json={"timeout": "9s"})
    assert edited.status_code == 200, edited.text
    r = cli("plan", *common, "--fail-on-drift")
    assert r.exit_code == 2 and "changed outside cesync" in r.output
    assert cli("apply", *common, "--auto-approve").exit_code == 0
    (repo / "tools" / "greet.yaml").write_text((repo / "tools" / "greet.yaml").read_text().replace('"1.5s"', '"2s"'))
    assert cli("plan", *common, "--fail-on-drift").exit_code == 0  # the repo's own change is no drift
    assert cli("plan", *common, "--detailed-exitcode").exit_code == 2


def test_a_target_that_names_something_new_and_untargeted_is_refused_at_plan_time() -> None:
    """Terraform would create the dependency too; cesync says which --target to add instead of failing at the API."""
    parent = "projects/p/locations/us/apps/a"
    agent = {"displayName": "B", "llmAgent": {}, "tools": [f"{parent}/tools/fresh"]}
    desired = [
        Resource(KINDS["agent"], "billing", agent),
        Resource(KINDS["tool"], "fresh", {"clientFunction": {"name": "fresh"}}),
    ]
    remote = [
        Resource(KINDS["app"], "app", {"name": parent, "displayName": "A", "etag": "1"}),
        Resource(
            KINDS["agent"], "billing", {"name": f"{parent}/agents/billing", "displayName": "B", "llmAgent": {}, "etag": "2"}
        ),
    ]
    with pytest.raises(CesyncError, match=r"agent billing names tool fresh, .* add --target tools/fresh"):
        build_plan("e", parent, desired, remote, targets={"agent/billing"})
    both = build_plan("e", parent, desired, remote, targets={"agent/billing", "tool/fresh"})
    assert [(c.action, c.kind.name, c.id) for c in both.changes] == [("create", "tool", "fresh"), ("update", "agent", "billing")]
