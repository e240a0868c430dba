"""Ownership judged on the app's state over random histories (pipeline/recording.py, core/record.py).

Each history is a seeded sequence of what happens to one app: the repo gains and loses tools,
a console user makes and deletes tools by hand (between runs and, through the emulator's write
hook, in the middle of an apply), applies run with and without --prune, some are cut short
(every call refused from a random write on, as a killed job leaves it), some lose a reply
(the connection dropped after the write), a plan saved before another apply is applied
after it, and two pipelines apply at the same moment (one in a process of its own). The invariant: a tool made by hand is never deleted by
cesync, whatever happened; it is judged on the app itself after every step.

CI runs the fixed seeds below; CESYNC_MODEL_HISTORIES=N runs N more (seeds 1000..), e.g.
``CESYNC_MODEL_HISTORIES=200 pytest -q -p no:xdist tests/pipeline/test_recording_model.py``.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterable, Iterator
from pathlib import Path

import httpx
import pytest

from cesync.emulator.faults import Injected
from cesync.emulator.server import BackgroundServer
from tests.helpers import cesync, emulator_env, make_repo

FIXED = [1, 2, 3, 4, 5, 6]
SEEDS = FIXED + list(range(1000, 1000 + int(os.environ.get("CESYNC_MODEL_HISTORIES", "0") or 0)))
STEPS = 12
REPO_IDS = [f"r{i}" for i in range(4)]
HAND_IDS = [f"h{i}" for i in range(4)]


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(auto_create_apps=True) as s:
        yield s


def tool_file(tid: str, word: str = "hi") -> str:
    return f"pythonFunction:\n  name: {tid}\n  pythonCode: |\n    def {tid}() -> dict:\n        return {{'w': '{word}'}}\n"


def hand_body(tid: str) -> dict[str, object]:
    return {"displayName": f"hand {tid}", "pythonFunction": {"name": tid, "pythonCode": f"def {tid}():\n    return {{}}\n"}}


class History:
    """One app, one repo, one console user; what the model believes is in the app by hand."""

    def __init__(self, seed: int, server: BackgroundServer, tmp: Path) -> None:
        self.rng = random.Random(seed)
        self.server = server
        self.app = f"projects/p/locations/us/apps/m{seed}"
        config = f"version: 1\nenvironments:\n  dev: {{project: p, location: us, app: m{seed}}}\n"
        self.root = make_repo(tmp, {"cesync.yaml": config})
        (self.root / "tools" / "greet.yaml").unlink()
        self.env = {**emulator_env(server.host), **({"CESYNC_PLAN_KEY": "k"} if self.rng.random() < 0.5 else {})}
        self.hand: set[str] = set()  # made by hand and not deleted by hand: must stay
        self.log: list[str] = [f"seed {seed}, key {'CESYNC_PLAN_KEY' in self.env}"]

    def app_tools(self) -> set[str]:
        answer = httpx.get(f"{self.server.url}/v1/{self.app}/tools", params={"pageSize": 1000})
        return {t["name"].rsplit("/", 1)[-1] for t in answer.json().get("tools", [])} if answer.status_code == 200 else set()

    def console(self, method: str, path: str, body: dict[str, object] | None = None) -> int:
        headers = {"Authorization": "Bearer console@example.com"}
        return httpx.request(method, f"{self.server.url}/v1/{path}", json=body, headers=headers).status_code

    # --- steps --------------------------------------------------------------------------------

    def repo_edit(self) -> None:
        tid = self.rng.choice(REPO_IDS)
        path = self.root / "tools" / f"{tid}.yaml"
        if path.exists() and self.rng.random() < 0.5:
            path.unlink()
            self.log.append(f"repo: remove {tid}")
        else:
            path.write_text(tool_file(tid, self.rng.choice(["hi", "hello", "hey"])), encoding="utf-8")
            self.log.append(f"repo: write {tid}")

    def hand_create(self) -> None:
        tid = self.rng.choice(HAND_IDS)
        if self.console("POST", f"{self.app}/tools?toolId={tid}", hand_body(tid)) == 200:
            self.hand.add(tid)
            self.log.append(f"console: create {tid}")

    def hand_delete(self) -> None:
        if self.hand:
            tid = self.rng.choice(sorted(self.hand))
            if self.console("DELETE", f"{self.app}/tools/{tid}?force=true") == 200:
                self.hand.discard(tid)
                self.log.append(f"console: delete {tid}")

    def apply(self, *extra: str) -> None:
        """An apply, with a console create at a random write of it, maybe cut short or a reply lost."""
        hooks, faults = self.server.hooks, self.server.app.state.faults
        at = self.rng.randrange(1, 6)
        tid = self.rng.choice(HAND_IDS)
        kill_at = self.rng.randrange(1, 6) if self.rng.random() < 0.25 else 0
        writes = 0

        def during(method: str, path: str) -> Iterable[Injected]:
            nonlocal writes
            writes += 1
            if kill_at and writes == kill_at:
                faults.fail_status = "PERMISSION_DENIED"  # the job dies here: nothing after answers
            return [Injected("POST", f"/v1/{self.app}/tools?toolId={tid}", hand_body(tid))] if writes == at else []

        hooks.answered.clear()
        hooks.before_write = during
        faults.drop_next = 1 if self.rng.random() < 0.2 else 0
        prune = ["--prune"] if self.rng.random() < 0.7 else []
        try:
            done = cesync("apply", "--auto-approve", *prune, *extra, cwd=self.root, env=self.env)
        finally:
            hooks.before_write, faults.fail_status, faults.drop_next = None, "", 0
        made = [c for c, status, _ in hooks.answered if status == 200]
        self.hand |= {tid for _ in made}
        self.log.append(
            f"apply {' '.join(prune + list(extra))}: exit {done.returncode}"
            + (f", console made {tid} at write {at}" if made else "")
            + (f", killed at write {kill_at}" if kill_at else "")
        )

    def concurrent(self) -> None:
        """A plan saved now and applied after another pipeline's apply of a changed repo."""
        saved = self.root.parent / "saved.json"
        prune = ["--prune"] if self.rng.random() < 0.7 else []
        made = cesync("plan", *prune, "--out", str(saved), cwd=self.root, env=self.env)
        self.repo_edit()
        self.apply()
        if made.returncode == 0 and saved.exists():
            late = cesync("apply", str(saved), "--auto-approve", cwd=self.root, env=self.env)
            self.log.append(f"apply of the plan saved before: exit {late.returncode}")

    def two_at_once(self) -> None:
        """Two pipelines apply at the same moment: one from the repo as it was, in a process of its
        own, one from the repo as edited, here; a console user makes a tool during both."""
        import shutil
        import subprocess
        import sys

        other = self.root.parent / f"other-{len(self.log)}"
        shutil.copytree(self.root, other)
        self.repo_edit()
        prune = ["--prune"] if self.rng.random() < 0.7 else []
        env = {**os.environ, **self.env, "NO_COLOR": "1"}
        process = subprocess.Popen(
            [sys.executable, "-m", "cesync.cli", "apply", "--auto-approve", *prune],
            cwd=other,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            self.apply()
        finally:
            code = process.wait(timeout=120)
        self.log.append(f"the other pipeline's apply {' '.join(prune)}: exit {code}")

    def check(self) -> None:
        gone = self.hand - self.app_tools()
        assert not gone, f"made by hand, deleted by cesync: {sorted(gone)}\n" + "\n".join(self.log)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_tool_made_by_hand_is_never_deleted_by_cesync(seed: int, server: BackgroundServer, tmp_path: Path) -> None:
    history = History(seed, server, tmp_path)
    steps = [history.repo_edit, history.hand_create, history.hand_delete, history.apply, history.apply, history.concurrent]
    steps += [history.two_at_once] if history.rng.random() < 0.5 else []
    for _ in range(STEPS):
        history.rng.choice(steps)()
        history.check()
    history.apply()  # and a last prune with the repo as it ended
    history.check()
