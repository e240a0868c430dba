"""Two repos, one app (cesync.yaml ``owner``), judged on the app's state over random histories.

Each history is a seeded sequence of what happens to one app shared by two repos, owners
``billing`` and ``support``, each with tools of its own, applied in random order with and without
``--prune``, while a console user makes and deletes tools by hand (between runs and, through the
emulator's write hook, in the middle of an apply) and deletes a repo's newest record. Now and then
one repo defines a tool the other applied, which must be refused. The invariants, checked on the app after every step:

- an apply of one repo deletes only tools that repo applied and no longer defines: never the
  other repo's (under ``--prune-unmanaged`` only while a console user's deletion of the other's
  records left them unrecorded, as docs/ownership.md says), never one made by hand (unless
  ``--prune-unmanaged`` says to);
- an apply that one repo's files tried to take from the other fails and leaves the tool as it was;
- after an apply that succeeded, the same repo's plan is empty (``--detailed-exitcode`` 0).

CI runs the fixed seeds below (a few seconds); CESYNC_MODEL_HISTORIES=N runs N more (seeds 1000..),
as ``tests/pipeline/test_recording_model.py`` does.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from cesync.emulator.faults import Injected
from cesync.emulator.server import BackgroundServer
from tests.helpers import cesync, emulator_env, make_repo

FIXED = [1, 2, 3]
SEEDS = FIXED + list(range(1000, 1000 + int(os.environ.get("CESYNC_MODEL_HISTORIES", "0") or 0)))
STEPS = 10
HAND_IDS = [f"h{i}" for i in range(3)]


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(auto_create_apps=True) as s:
        yield s


def tool_file(tid: str, word: str) -> str:
    return f"pythonFunction:\n  name: {tid}\n  pythonCode: |\n    def {tid}() -> dict:\n        return {{'w': '{word}'}}\n"


def hand_body(tid: str) -> dict[str, object]:
    return {"displayName": f"hand {tid}", "pythonFunction": {"name": tid, "pythonCode": f"def {tid}():\n    return {{}}\n"}}


@dataclass
class Repo:
    owner: str
    env: str  # each repo names its environment as it likes
    root: Path
    ids: list[str]
    applied: set[str] = field(default_factory=set)  # in the app because this repo's apply made it
    unrecorded: bool = False  # a console user deleted its newest record since its last apply
    ids_since_record: set[str] = field(default_factory=set)  # what its deleted records named

    def defined(self) -> set[str]:
        return {p.stem for p in (self.root / "tools").glob("*.yaml")}


class History:
    def __init__(self, seed: int, server: BackgroundServer, tmp: Path) -> None:
        self.rng = random.Random(seed)
        self.server = server
        self.app = f"projects/p/locations/us/apps/o{seed}"
        self.repos = [self._repo(tmp, seed, "billing", "dev", "b"), self._repo(tmp, seed, "support", "shared", "s")]
        key = self.rng.random() < 0.5
        self.env = {**emulator_env(server.host), **({"CESYNC_RECORD_KEY": "pipeline secret"} if key else {})}
        self.hand: set[str] = set()
        self.log: list[str] = [f"seed {seed}, key {key}"]

    @staticmethod
    def _repo(tmp: Path, seed: int, owner: str, env: str, prefix: str) -> Repo:
        config = f"version: 1\nowner: {owner}\nenvironments:\n  {env}: {{project: p, location: us, app: o{seed}}}\n"
        root = make_repo(tmp / owner, {"cesync.yaml": config})
        (root / "tools" / "greet.yaml").unlink()
        return Repo(owner, env, root, [f"{prefix}{i}" for i in range(3)])

    def app_tools(self) -> dict[str, str]:
        answer = httpx.get(f"{self.server.url}/v1/{self.app}/tools", params={"pageSize": 1000})
        tools = answer.json().get("tools", []) if answer.status_code == 200 else []
        return {t["name"].rsplit("/", 1)[-1]: t.get("etag", "") for t in tools}

    def console(self, method: str, path: str, body: dict[str, object] | None = None) -> int:
        headers = {"Authorization": "Bearer console@example.com"}
        return httpx.request(method, f"{self.server.url}/v1/{path}", json=body, headers=headers).status_code

    def fail(self, why: str) -> None:
        pytest.fail(why + "\n" + "\n".join(self.log))

    # --- steps --------------------------------------------------------------------------------

    def repo_edit(self) -> None:
        repo = self.rng.choice(self.repos)
        tid = self.rng.choice(repo.ids)
        path = repo.root / "tools" / f"{tid}.yaml"
        if path.exists() and self.rng.random() < 0.5:
            path.unlink()
            self.log.append(f"{repo.owner}: remove {tid}")
        else:
            path.write_text(tool_file(tid, self.rng.choice(["hi", "hello"])), encoding="utf-8")
            self.log.append(f"{repo.owner}: write {tid}")

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

    def apply(self, repo: Repo | None = None) -> None:
        """One repo's apply, maybe with --prune, a console user making a tool at a random write of it;
        then that repo's plan, which must be empty when the apply succeeded."""
        repo = repo or self.rng.choice(self.repos)
        hooks = self.server.hooks
        at, tid, writes = self.rng.randrange(1, 4), self.rng.choice(HAND_IDS), 0

        def during(method: str, path: str) -> Iterable[Injected]:
            nonlocal writes
            writes += 1
            return [Injected("POST", f"/v1/{self.app}/tools?toolId={tid}", hand_body(tid))] if writes == at else []

        roll = self.rng.random()
        prune = ["--prune", "--prune-unmanaged"] if roll < 0.15 else ["--prune"] if roll < 0.7 else []
        before = self.app_tools()
        hooks.answered.clear()
        hooks.before_write = during
        try:
            # the mass-change guard (an emptied repo pruning) is not what is judged here
            done = cesync(
                "apply", "--auto-approve", "--allow-mass-change", "--env", repo.env, *prune, cwd=repo.root, env=self.env
            )
        finally:
            hooks.before_write = None
        if any(status == 200 for _, status, _ in hooks.answered):
            self.hand.add(tid)
        self.log.append(
            f"{repo.owner}: apply {' '.join(prune)}: exit {done.returncode}" + (f", console made {tid}" if writes >= at else "")
        )
        after = self.app_tools()
        gone = set(before) - set(after)
        if "--prune-unmanaged" in prune:  # asked to delete what nobody owns: hand-made tools may go
            self.hand -= gone
            gone -= set(HAND_IDS)
            for other in self.repos:  # and what a repo applied after the newest record a console user left it
                if other is not repo and other.unrecorded:
                    other.applied -= gone
                    gone -= other.ids_since_record
        if gone - repo.applied:
            self.fail(f"{repo.owner}'s apply deleted what it never applied: {sorted(gone - repo.applied)}\n{done.stdout}")
        if gone & repo.defined():
            self.fail(f"{repo.owner}'s apply deleted what its repo defines: {sorted(gone & repo.defined())}")
        if done.returncode != 0:
            self.fail(f"{repo.owner}'s apply failed: {done.stdout}{done.stderr}")
        repo.applied = (repo.applied - gone) | repo.defined()
        repo.unrecorded, repo.ids_since_record = False, set()
        # what a console user made during it is no change of this repo's (unless --prune-unmanaged asks)
        own = prune[:1]
        again = cesync("plan", "--env", repo.env, *own, "--detailed-exitcode", cwd=repo.root, env=self.env)
        if again.returncode != 0:
            self.fail(f"{repo.owner}'s plan after its own apply is not empty (exit {again.returncode}):\n{again.stdout}")

    def record_delete(self) -> None:
        """A console user deletes one repo's newest record (an app version): that repo's older record
        (or none) speaks for it until its next apply."""
        repo = self.rng.choice(self.repos)
        answer = httpx.get(f"{self.server.url}/v1/{self.app}/versions", params={"pageSize": 1000})
        mine = [
            v
            for v in answer.json().get("appVersions", [])
            if "cesync-record: " in v.get("description", "") and f'\\"ns\\":\\"{repo.owner}\\"' in v["description"]
        ]
        if mine:
            newest = max(mine, key=lambda v: v["createTime"])
            if self.console("DELETE", newest["name"]) == 200:
                repo.unrecorded, repo.ids_since_record = True, repo.ids_since_record | set(repo.ids)
                self.log.append(f"console: delete {repo.owner}'s newest record")

    def take_other(self) -> None:
        """One repo gains a file for a tool the other applied: its plan and apply are refused, and the
        tool is left as it was; then the file goes again."""
        repo, other = self.rng.sample(self.repos, 2)
        theirs = sorted(other.applied & set(self.app_tools()))
        if not theirs or other.unrecorded:  # with its records deleted, nothing says whose it is
            return
        tid = self.rng.choice(theirs)
        path = repo.root / "tools" / f"{tid}.yaml"
        path.write_text(tool_file(tid, "mine now"), encoding="utf-8")
        before = self.app_tools()
        try:
            done = cesync("apply", "--auto-approve", "--env", repo.env, "--prune", cwd=repo.root, env=self.env)
        finally:
            path.unlink()
        self.log.append(f"{repo.owner}: apply defining {other.owner}'s {tid}: exit {done.returncode}")
        if done.returncode == 0 or "another repo owns" not in done.stdout + done.stderr:
            self.fail(f"{repo.owner} took {other.owner}'s {tid}: exit {done.returncode}\n{done.stdout}{done.stderr}")
        if self.app_tools() != before:
            self.fail(f"a refused apply changed the app: {before} -> {self.app_tools()}")

    def check(self) -> None:
        there = set(self.app_tools())
        if self.hand - there:
            self.fail(f"made by hand, deleted by cesync: {sorted(self.hand - there)}")


@pytest.mark.parametrize("seed", SEEDS)
def test_two_repos_never_delete_or_adopt_each_others_or_hand_made_tools(
    seed: int, server: BackgroundServer, tmp_path: Path
) -> None:
    history = History(seed, server, tmp_path)
    steps = [history.repo_edit, history.repo_edit, history.hand_create, history.hand_delete, history.apply, history.apply]
    steps += [history.take_other, history.record_delete]
    for _ in range(STEPS):
        history.rng.choice(steps)()
        history.check()
    for repo in history.repos:  # each repo's last apply with the repo as it ended
        history.apply(repo)
        history.check()
