"""Where the command line reads and writes: the endpoint in the plan's header, CES_EMULATOR_HOST's reach,
environments sharing an app, and an endpoint nobody listens on."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cesync.emulator.server import BackgroundServer, free_port
from tests.conftest import EXAMPLES
from tests.helpers import cesync


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    dst = tmp_path / "support-bot"
    shutil.copytree(EXAMPLES / "support-bot", dst, ignore=shutil.ignore_patterns(".cesync"))
    return dst


def test_an_exported_emulator_host_does_not_send_prod_to_the_emulator(repo: Path) -> None:
    import httpx

    with BackgroundServer() as server:
        refused = cesync("plan", "--dir", str(repo), "--env", "prod", env={"CES_EMULATOR_HOST": server.host})
        assert refused.returncode == 1 and "Traceback" not in refused.stderr
        assert f"CES_EMULATOR_HOST is set ({server.host}) but environment 'prod' points at the CES API" in refused.stderr
        assert "https://ces.us.rep.googleapis.com" in refused.stderr
        assert httpx.get(f"{server.url}/admin/stats").json().get("writes", 0) == 0
        said = cesync(
            "plan", "--dir", str(repo), "--env", "prod", "--endpoint", "emulator", env={"CES_EMULATOR_HOST": server.host}
        )
    assert said.returncode == 0, said.stderr
    assert said.stdout.splitlines()[0] == (
        f"Plan for environment 'prod' (projects/acme-support/locations/us/apps/support-bot) at http://{server.host}"
    )


def test_the_header_names_the_endpoint_in_every_format(repo: Path) -> None:
    text = cesync("plan", "--dir", str(repo), "--env", "local")
    assert text.stdout.splitlines()[0].endswith("apps/support-bot) at the embedded emulator"), text.stdout[:200]
    saved = repo / "plan.json"
    assert cesync("plan", "--dir", str(repo), "--env", "local", "--out", str(saved)).returncode == 0
    assert json.loads(saved.read_text())["endpoint"] == "embedded"
    md = cesync("show", str(saved), "--format", "markdown")
    assert "App `projects/local/locations/us/apps/support-bot` at the embedded emulator\n" in md.stdout  # words, not code


def test_two_environments_on_one_app_are_a_validate_warning(repo: Path) -> None:
    config = repo / "cesync.yaml"
    config.write_text(config.read_text().replace("app: support-bot-staging", "app: support-bot-dev"))
    result = cesync("validate", "--dir", str(repo))
    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stderr.splitlines() if "both point at" in x)
    assert line.startswith("cesync.yaml:") and "environments 'dev' and 'staging' both point at app 'support-bot-dev'" in line
    strict = cesync("validate", "--dir", str(repo), "--strict")
    assert strict.returncode == 1 and "both point at" in strict.stderr


@pytest.mark.parametrize("command", [["plan"], ["apply", "--auto-approve"], ["pull", "--dry-run"], ["versions"]])
def test_an_endpoint_nobody_listens_on_is_one_short_error(repo: Path, command: list[str]) -> None:
    """With the default retries: no retry line per concurrent read, one error saying what to check."""
    port = free_port()
    result = cesync(*command, "--dir", str(repo), "--env", "prod", "--endpoint", f"http://127.0.0.1:{port}")
    lines = result.stderr.splitlines()
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert not [x for x in lines if x.startswith("retry ")], lines
    [error] = [x for x in lines if x.startswith("error: ")]
    assert f"cannot reach http://127.0.0.1:{port}: the connection was refused" in error
    assert "is the emulator running" in error and "--endpoint" in error
    assert len(lines) <= 2, lines
