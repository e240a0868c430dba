"""A repo rendered on two cores (forked.fork_map) gives what one process gives: resources,
problems in their order, validate's findings, and the plan against an app."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import sys
from pathlib import Path

import pytest
import yaml

from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.core import documents
from cesync.core.planbuild import build_plan
from cesync.errors import ConfigError, Problem
from cesync.render.text import render_text
from cesync.repo import forked
from cesync.repo.repo import Repo, load_repo

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
from generate import generate

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="without os.fork every render is in one process")

PROBLEMS = {  # spread over both halves of the file list (the child renders the tail)
    "tools/a-bad-yaml.yaml": "clientFunction: {name: x\n",
    "tools/a-cycle-1.yaml": "widgetTool:\n  name: c1\n  dataMapping: {sourceToolName: {ref: tools/z-cycle-2}}\n",
    "tools/z-cycle-2.yaml": "widgetTool:\n  name: c2\n  dataMapping: {sourceToolName: {ref: tools/a-cycle-1}}\n",
    "tools/m-unknown.yaml": "clientFunction: {name: m, descripton: x}\n",
    "tools/z-bad-code.yaml": "pythonFunction:\n  name: f\n  pythonCode: |\n    def g(:\n",
    "tools/z-dup-name.yaml": "clientFunction: {name: quote_1}\n",
    "tools/z-missing-var.yaml": "clientFunction: {name: mv, description: '${NOT_SET_ANYWHERE}'}\n",
}


def make(tmp_path: Path, problems: bool) -> Repo:
    root = generate(tmp_path / "repo", 60)
    # Texts this process has never parsed: the parent must get the child's parses, not its own cache's.
    nonce = f"# {random.random()}\n"
    for schema in (root / "schemas").glob("*"):
        schema.write_text(schema.read_text() + nonce)
    for rel, text in (PROBLEMS if problems else {}).items():
        (root / rel).write_text(text)
    return load_repo(root)


def render(repo: Repo, env: str, *, fork: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Resource], list[Problem]]:
    with monkeypatch.context() as m:
        m.setattr(forked, "can_fork", lambda: fork)
        m.setattr(forked, "MIN_ITEMS", 0)
        try:
            return repo.render(repo.env(env)), []
        except ConfigError as exc:
            return [], exc.problems


@pytest.mark.parametrize("problems", [False, True], ids=["clean", "problems"])
def test_forked_render_is_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, problems: bool) -> None:
    repo = make(tmp_path, problems)
    for env in repo.env_names:
        forked_result = render(repo, env, fork=True, monkeypatch=monkeypatch)
        assert forked_result == render(repo, env, fork=False, monkeypatch=monkeypatch)
        assert bool(forked_result[1]) == problems and bool(forked_result[0]) != problems
    if problems:
        found = "\n".join(map(str, render(repo, "dev", fork=True, monkeypatch=monkeypatch)[1]))
        for what in ("invalid YAML", "reference cycle", "unknown field", "does not parse", "duplicate tool name", "NOT_SET"):
            assert what in found, what


def test_forked_validate_is_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make(tmp_path, True)
    with monkeypatch.context() as m:
        m.setattr(forked, "can_fork", lambda: True)
        m.setattr(forked, "MIN_ITEMS", 0)
        both = repo.validate()
    with monkeypatch.context() as m:
        m.setattr(forked, "can_fork", lambda: False)
        assert both == repo.validate()
        assert repo.validate(["dev"]) == sorted(set(render(repo, "dev", fork=False, monkeypatch=m)[1]))


def test_forked_render_plans_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan diffs OpenAPI documents by meaning: the child's parses come back and give the same plan."""
    repo = make(tmp_path, False)
    desired, _ = render(repo, "dev", fork=True, monkeypatch=monkeypatch)
    remote = [Resource(r.kind, r.id, dict(r.body)) for r in desired[: len(desired) // 2]]
    for r in remote[::3]:  # some changed, half missing
        r.body["description"] = "changed by hand"
    parent = repo.env("dev").parent
    via_fork = build_plan("dev", parent, desired, remote, prune=True)
    serial, _ = render(repo, "dev", fork=False, monkeypatch=monkeypatch)
    in_one = build_plan("dev", parent, serial, remote, prune=True)
    # created_at is the clock's second: two plans made across a second's edge differ there only
    assert via_fork.to_json() == dataclasses.replace(in_one, created_at=via_fork.created_at).to_json()
    assert via_fork.has_changes
    # What the plan compared is what parsing each text gives (not only what both renders share).
    texts = [r.body[f]["openApiSchema"] for r in desired for f in ("openApiTool", "openApiToolset") if f in r.body]
    adopted = [t for t in texts if t in documents._SUBSTITUTED]
    assert len(adopted) >= len(texts) // 3  # the child's share came back
    assert all(documents.parse_document(t) == json.loads(json.dumps(yaml.safe_load(t))) for t in texts)
    # The plan's text, part of it made in a forked process (as print_plan does), is the same too.
    monkeypatch.setattr(forked, "MIN_ITEMS", 0)
    for r in remote[1::3]:
        r.body["displayName"] = "changed by hand"
    code = next(r for r in remote if "pythonFunction" in r.body)
    code.body["pythonFunction"] = {**code.body["pythonFunction"], "pythonCode": "def f():\n    return 1\n"}
    remote.append(Resource(KINDS["tool"], "zz-gone", {"clientFunction": {"name": "gone"}}))
    mixed = build_plan("dev", parent, desired, remote, prune=True)
    assert {"create", "update", "delete"} <= {c.action for c in mixed.changes}
    forks = []
    fork = os.fork
    monkeypatch.setattr(forked, "can_fork", lambda: True)  # pytest-xdist's worker runs threads
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or fork())
    for color in (False, True):
        one = render_text(mixed, color=color)
        assert render_text(mixed, color=color, mapper=forked.fork_map) == one
    assert len(forks) == 2


def _processes_naming(text: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and text in (proc / "cmdline").read_bytes().decode(errors="replace"):
                found.append(int(proc.name))
        except OSError:
            pass
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork is used on Linux only")
@pytest.mark.parametrize(("seed", "group"), [(0, False), (1, True), (2, False), (3, True)])
def test_ctrl_c_during_a_forked_render(tmp_path: Path, seed: int, group: bool) -> None:
    """SIGINT to the process (a test runner) or to its group (Ctrl-C on a terminal) while two
    processes render: exit 130 with 'interrupted' and no traceback, and no process left behind."""
    import signal
    import subprocess
    import time

    root = generate(tmp_path / f"repo-{seed}", 400)
    proc = subprocess.Popen(
        [sys.executable, "-m", "cesync.cli", "validate", "--dir", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    time.sleep(random.Random(seed).uniform(0.4, 1.2))  # start-up takes about 0.4 s: mostly during the render
    if group:
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert "Traceback" not in err, err
    assert (proc.returncode == 130 and err.strip() == "interrupted") or proc.returncode == 0, (proc.returncode, out, err)
    deadline = time.monotonic() + 5
    while _processes_naming(str(root)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_naming(str(root)) == []


def test_forked_credential_lint_is_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cesync.repo.credentials import lint_credentials

    root = generate(tmp_path / "repo", 60)
    for i in (1, 30, 59):  # in both halves, and in an included file
        path = next(root.glob(f"tool*/t{i:05d}.yaml"))  # tools/ or toolsets/
        path.write_text(path.read_text() + f"# api_key: Zx9Qw8Er7Ty6Ui5Op4As3Df{i:02d}\n")
    include = sorted((root / "code").glob("*"))[-1]
    include.write_text(include.read_text() + "# Bearer Zx9Qw8Er7Ty6Ui5Op4As3Df2x\n")
    repo = load_repo(root)
    with monkeypatch.context() as m:
        m.setattr(forked, "can_fork", lambda: True)
        m.setattr(forked, "MIN_ITEMS", 0)
        both = lint_credentials(repo)
    with monkeypatch.context() as m:
        m.setattr(forked, "can_fork", lambda: False)
        assert both == lint_credentials(repo)
    assert len(both) == 4 and {p.file for p in both} >= {"tools/t00001.yaml", "tools/t00059.yaml"}
