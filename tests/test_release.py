"""The release process: the version is the git tag's, the sdist
and wheel build from a tagged, an untagged (CI's shallow clone) and a history-less tree, the
wheel works apart from the source tree, and every example pins the newest released version.

Builds run with the test environment's hatchling and hatch-vcs (``--no-isolation``): the
build backend's own, offline."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tests.conftest import EXAMPLES, ROOT

CHANGELOG = ROOT / "CHANGELOG.md"
RELEASE = ROOT / ".github" / "workflows" / "release.yml"
GIT = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def released() -> str:
    """The newest released version of the changelog (the first heading after Unreleased)."""
    found = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", CHANGELOG.read_text(), re.M)
    assert found, "CHANGELOG.md names no release"
    return found[0]


def _run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(args, cwd=cwd, env={**os.environ, **GIT, **(env or {})}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{args}: {done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done.stdout


def _clone(tmp: Path, *, depth: bool) -> Path:
    """The committed tree as CI's checkout has it (a clone of HEAD, shallow when depth)."""
    dst = tmp / "clone"
    _run("git", "clone", "-q", *(["--depth", "1"] if depth else []), ROOT.as_uri(), str(dst), cwd=tmp)
    return dst


def _build(tree: Path) -> tuple[Path, Path]:
    """The sdist, then the wheel built from it (as python -m build, and PyPI's users, do)."""
    out = tree / "dist"
    _run(sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(tree), cwd=tree)
    [sdist], [wheel] = sorted(out.glob("*.tar.gz")), sorted(out.glob("*.whl"))
    return sdist, wheel


def _version_in(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as z:
        text = z.read("cesync/_version.py").decode()
        metadata = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        version = re.search(r"^Version: (.+)$", z.read(metadata).decode(), re.M)
    assert version and f'__version__ = "{version.group(1)}"' in text, text
    return version.group(1)


@pytest.mark.slow
def test_a_tagged_build_is_the_tag_s_version_and_its_wheel_runs_the_example_app(tmp_path: Path) -> None:
    tree = _clone(tmp_path, depth=True)
    _run("git", "tag", "v9.8.7", cwd=tree)
    sdist, wheel = _build(tree)
    assert sdist.name == "cesync-9.8.7.tar.gz" and wheel.name == "cesync-9.8.7-py3-none-any.whl"
    assert _version_in(wheel) == "9.8.7"
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    assert "cesync/api/ces_v1.binpb" in names and "cesync/emulator/sandbox_runner/main.py" in names
    assert not any(n.startswith("tests/") for n in names)
    with tarfile.open(sdist) as t:
        assert "cesync-9.8.7/PKG-INFO" in t.getnames() and "cesync-9.8.7/CHANGELOG.md" in t.getnames()

    # installed apart from the source tree: the wheel's files, not src/ (the test environment's
    # dependencies come along on PYTHONPATH's heels, so nothing is downloaded)
    target = tmp_path / "installed"
    _run(sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(wheel), cwd=tmp_path)
    env = {"PYTHONPATH": str(target), "NO_COLOR": "1", "CESYNC_ENDPOINT": "embedded"}
    env.update({k: "" for k in os.environ if k.startswith(("CESYNC_VAR_", "CES_"))})
    cesync = [sys.executable, "-m", "cesync.cli"]
    where = _run(sys.executable, "-c", "import cesync; print(cesync.__file__)", cwd=tmp_path, env=env)
    assert where.startswith(str(target)), where
    assert "9.8.7" in _run(*cesync, "--version", cwd=tmp_path, env=env)
    bot = tmp_path / "bot"
    shutil.copytree(EXAMPLES / "support-bot", bot, ignore=shutil.ignore_patterns(".cesync"))
    _run(*cesync, "validate", cwd=bot, env=env)
    _run(*cesync, "apply", "--env", "local", "--auto-approve", cwd=bot, env=env)
    _run(*cesync, "plan", "--env", "local", "--detailed-exitcode", cwd=bot, env=env)


@pytest.mark.slow
def test_a_build_without_tags_or_without_history_still_builds(tmp_path: Path) -> None:
    shallow = _clone(tmp_path, depth=True)  # CI's checkout: one commit, no tags
    _, wheel = _build(shallow)
    assert re.fullmatch(r"\d+\.\d+\.\d+\.dev\d+\+g[0-9a-f]+(\.d\d+)?", _version_in(wheel)), wheel.name
    archive = tmp_path / "archive"  # a source archive: no .git at all
    shutil.copytree(shallow, archive, ignore=shutil.ignore_patterns(".git", "dist"))
    _, wheel = _build(archive)
    assert _version_in(wheel) == "0.0.0"


def test_every_example_pins_the_newest_release() -> None:
    """Example CI installs a cesync an index serves: the version the changelog released last."""
    version = released()
    files = [*sorted((EXAMPLES / "ci").rglob("*.yml")), ROOT / "docs" / "ci-cd.md", ROOT / "README.md"]
    for path in files:
        for line in path.read_text().splitlines():
            for spec in re.findall(r"pip install[^\n#]*?\bcesync\b(\S*)", line):
                assert spec == f"=={version}", f"{path.name}: {line.strip()}"
    assert f"rev: v{version}" in (ROOT / "docs" / "ci-cd.md").read_text()


def test_the_release_workflow_publishes_with_trusted_publishing_only_after_its_checks() -> None:
    workflow = YAML(typ="safe").load(RELEASE.read_text())
    assert workflow["on"] == {"push": {"tags": ["v*.*.*"]}} and workflow["permissions"] == {"contents": "read"}
    build, publish = workflow["jobs"]["build"], workflow["jobs"]["publish"]
    steps = "\n".join(str(s.get("run", "")) for s in build["steps"])
    assert "python -m build" in steps and "twine check" in steps and "cesync plan" in steps
    assert publish["needs"] == "build" and publish["environment"] == "pypi"
    assert publish["permissions"] == {"id-token": "write"}  # OIDC, no stored token
    assert any(s.get("uses", "").startswith("pypa/gh-action-pypi-publish@") for s in publish["steps"])
    assert not any("password" in (s.get("with") or {}) for s in publish["steps"])
    bin_dir = Path(sys.executable).parent
    schema = subprocess.run(
        [str(bin_dir / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(RELEASE)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert schema.returncode == 0, schema.stdout + schema.stderr
