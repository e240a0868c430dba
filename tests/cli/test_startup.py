"""What the command line does before any command runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

FIXTURE = Path(__file__).parent.parent / "fixtures" / "minimal"


def _fake_plugin(site: Path, marker: Path) -> None:
    """An installed distribution offering a pydantic plugin (entry point group 'pydantic') that
    leaves a file behind when pydantic loads it."""
    (site / "spy_plugin.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('loaded')\nplugin = object()\n"
    )
    info = site / "spy_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: spy-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pydantic]\nspy = spy_plugin:plugin\n")


def _validate(site: Path, **env: str) -> subprocess.CompletedProcess[str]:
    paths = [str(site), *(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]
    full = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    full.update(PYTHONPATH=os.pathsep.join(paths), **env)
    return subprocess.run(
        [sys.executable, "-m", "cesync.cli", "validate", "--dir", str(FIXTURE)], capture_output=True, text=True, env=full
    )


def test_cesync_does_not_scan_installed_distributions_for_pydantic_plugins(tmp_path: Path) -> None:
    marker = tmp_path / "loaded"
    _fake_plugin(tmp_path, marker)
    result = _validate(tmp_path)
    assert result.returncode == 0, result.stderr
    assert not marker.exists()


def test_a_user_who_enables_pydantic_plugins_keeps_them(tmp_path: Path) -> None:
    """The switch is a default: PYDANTIC_DISABLE_PLUGINS set by the user wins (here: none disabled)."""
    marker = tmp_path / "loaded"
    _fake_plugin(tmp_path, marker)
    _validate(tmp_path, PYDANTIC_DISABLE_PLUGINS="")
    assert marker.exists()


def test_a_repo_without_evaluations_never_builds_their_models() -> None:
    """The v1beta evaluation models load on first use (cesync.models.__getattr__), not with every command."""
    script = (
        "import sys\n"
        "from cesync.cli import main\n"
        f"try:\n    main(['validate', '--dir', {str(FIXTURE)!r}])\nexcept SystemExit as exc:\n    assert exc.code == 0, exc.code\n"
        "print('cesync.models.evaluations' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.stdout.splitlines()[-1] == "False", result.stdout + result.stderr
