"""ignoreChanges end to end (issue #38 item 1): a field the console owns is never planned, applied or
pulled, is shown as left in every format, and saved plans still apply."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx

from cesync.emulator.server import BackgroundServer
from tests.helpers import FIXTURES, cesync

TOOL = "projects/p/locations/us/apps/pull-app/tools/greet"


def test_a_field_left_to_the_console_is_kept_shown_and_never_pulled(tmp_path: Path, emulator: BackgroundServer) -> None:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "pull", root)
    greet = root / "tools" / "greet.yaml"
    config = root / "cesync.yaml"
    config.write_text(config.read_text().replace("defaults:\n", "defaults:\n  ignoreChanges: {agent: [instruction]}\n", 1))
    greet.write_text(greet.read_text() + "ignoreChanges: [timeout]\n")
    common = ["--dir", str(root), "--endpoint", emulator.url]
    assert cesync("validate", "--dir", str(root)).returncode == 0
    assert cesync("apply", *common, "--auto-approve").returncode == 0  # a create sends the repo's value
    assert httpx.get(f"{emulator.url}/v1/{TOOL}").json()["timeout"] == "1.500s"
    tuned = httpx.patch(f"{emulator.url}/v1/{TOOL}", params={"updateMask": "timeout"}, json={"timeout": "9s"})
    assert tuned.status_code == 200, tuned.text  # someone tunes it in the console

    plan = json.loads(cesync("plan", *common, "--format", "json").stdout)
    assert plan["changes"] == [] and plan["ignored"] == {TOOL: ["timeout"]}
    text = cesync("plan", *common, "--detailed-exitcode")
    assert (
        text.returncode == 0 and "Left to the console (ignoreChanges)" in text.stdout and "= tool greet: timeout" in text.stdout
    )
    assert "- `tool greet`: `timeout`" in cesync("plan", *common, "--format", "markdown").stdout

    pulled = cesync("pull", *common)
    assert pulled.returncode == 0, pulled.stderr
    assert '"1.5s"' in greet.read_text()  # pull never writes it back

    # the repo's own change to the field is not applied either; another field's is, through a saved plan
    greet.write_text(greet.read_text().replace('"1.5s"', '"3s"').replace("name: greet ", "name: greet  "))
    code = root / "code" / "greet.py"
    code.write_text(code.read_text().replace("Hello ", "Hi "))
    saved = tmp_path / "plan.json"
    planned = json.loads(cesync("plan", *common, "--out", str(saved), "--format", "json").stdout)
    assert [(c["id"], c["update_mask"]) for c in planned["changes"]] == [("greet", ["pythonFunction.pythonCode"])]
    applied = cesync("apply", str(saved), *common, "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert httpx.get(f"{emulator.url}/v1/{TOOL}").json()["timeout"] == "9s"

    # without the rule, the plan puts the repo's value back
    greet.write_text(greet.read_text().replace("ignoreChanges: [timeout]\n", ""))
    again = json.loads(cesync("plan", *common, "--format", "json").stdout)
    assert [c["update_mask"] for c in again["changes"]] == [["timeout"]] and again["ignored"] == {}
