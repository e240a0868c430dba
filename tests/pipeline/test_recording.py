"""What the applied record says cesync owns (pipeline/recording.py), judged on the app's state."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from cesync.emulator.faults import Injected
from cesync.emulator.server import BackgroundServer
from tests.helpers import cesync, emulator_env, make_repo

APP = "projects/p/locations/us/apps/a"


def tool(name: str) -> str:
    return f"pythonFunction:\n  name: {name}\n  pythonCode: |\n    def {name}() -> dict:\n        return {{}}\n"


@pytest.fixture
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(auto_create_apps=True) as s:
        yield s


def tools_of(server: BackgroundServer) -> set[str]:
    import httpx

    names = httpx.get(f"{server.url}/v1/{APP}/tools", params={"pageSize": 1000}).json().get("tools", [])
    return {t["name"].rsplit("/", 1)[-1] for t in names}


def hand_made(tid: str) -> Injected:
    body = {"displayName": tid, "pythonFunction": {"name": tid, "pythonCode": f"def {tid}():\n    return {{}}\n"}}
    return Injected("POST", f"/v1/{APP}/tools?toolId={tid}", body)


def test_a_tool_made_by_hand_during_an_apply_is_never_owned(tmp_path: Path, server: BackgroundServer) -> None:
    root = make_repo(tmp_path, {"tools/one.yaml": tool("one"), "tools/two.yaml": tool("two")})
    env = emulator_env(server.host)
    fired: list[str] = []

    def console(method: str, path: str) -> Iterable[Injected]:
        if method == "POST" and "/tools" in path and not fired:  # during the apply's first create
            fired.append(path)
            return [hand_made("handt13")]
        return []

    server.hooks.before_write = console
    done = cesync("apply", "--auto-approve", "--prune", cwd=root, env=env)
    assert done.returncode == 0, done.stderr
    server.hooks.before_write = None
    assert fired and server.hooks.answered[0][1] == 200 and "handt13" in tools_of(server)
    (root / "tools" / "two.yaml").unlink()
    plan = cesync("plan", "--prune", "--format", "json", cwd=root, env=env)
    deletes = [c["id"] for c in json.loads(plan.stdout)["changes"] if c["action"] == "delete"]
    assert deletes == ["two"], plan.stdout
    assert cesync("apply", "--auto-approve", "--prune", cwd=root, env=env).returncode == 0
    assert tools_of(server) == {"greet", "one", "handt13"}
