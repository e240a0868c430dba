"""Google's Terraform acceptance-test samples for CES, each written as a cesync repo (#23 item 8).

The samples (GoogleCloudPlatform/magic-modules, mmv1/templates/terraform/samples/services/ces/,
at the commit tests/evidence/samples.txt names) are run by Google against the real service, so
what they create is what CES accepts. Each one's resources are a repo under
tests/fixtures/terraform/<sample>/ (cesync.yaml cites the sample and says where the repo
departs from it); each must validate, apply to the emulator over HTTP and then plan empty.

Which sample maps to which fixture: tests/fixtures/terraform/<the sample's name>/, and SAMPLES
below says what a sample needs beyond that (an app version made first; one sample, the
location's security settings, is outside any app). A sample the manifest lists with no
fixture fails the test, so a new sample cannot be left out silently.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cesync.emulator.server import BackgroundServer
from tests.helpers import FIXTURES, official_client
from tests.helpers import cesync_in_process as cesync

HERE = Path(__file__).parent
MANIFEST = HERE / "samples.txt"
TERRAFORM = FIXTURES / "terraform"
SAMPLES_DIR = "mmv1/templates/terraform/samples/services/ces/"


def manifest() -> tuple[str, list[str]]:
    """The magic-modules commit and the sample paths the manifest lists."""
    lines = [line.strip() for line in MANIFEST.read_text(encoding="utf-8").splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    commit = lines[0].removeprefix("commit ").strip()
    return commit, lines[1:]


def fixture_of(sample_path: str) -> Path:
    return TERRAFORM / Path(sample_path).name.removesuffix(".tf.tmpl")


COMMIT, LISTED = manifest()


def test_the_manifest_names_a_commit_and_samples_of_ces() -> None:
    assert len(COMMIT) == 40 and all(c in "0123456789abcdef" for c in COMMIT)
    assert LISTED and all(p.startswith(SAMPLES_DIR) and p.endswith(".tf.tmpl") for p in LISTED)
    assert len(set(LISTED)) == len(LISTED)


@pytest.mark.parametrize("sample", LISTED, ids=[Path(p).name for p in LISTED])
def test_every_listed_sample_has_a_fixture_that_cites_it(sample: str) -> None:
    config = fixture_of(sample) / "cesync.yaml"
    assert config.is_file(), f"{sample} has no fixture: write it as a cesync repo under {config.parent}"
    head = config.read_text(encoding="utf-8")
    assert sample in head and COMMIT in head, f"{config} must cite {sample} at {COMMIT}"


def test_every_fixture_is_a_listed_sample() -> None:
    fixtures = {p.name for p in TERRAFORM.iterdir() if p.is_dir()}
    assert fixtures == {fixture_of(p).name for p in LISTED}


def test_each_fixture_names_its_own_app() -> None:
    apps = [next(line for line in (fixture_of(p) / "cesync.yaml").read_text().splitlines() if "app:" in line) for p in LISTED]
    assert len(set(apps)) == len(apps)


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(auto_create_apps=False, operation_delay=0.0) as s:
        yield s


def app_name(repo: Path) -> str:
    from ruamel.yaml import YAML

    local = YAML(typ="safe").load((repo / "cesync.yaml").read_text(encoding="utf-8"))["environments"]["local"]
    return f"projects/{local['project']}/locations/{local['location']}/apps/{local['app']}"


def run(*args: str, ok: tuple[int, ...] = (0,)) -> str:
    r = cesync(*args)
    assert r.returncode in ok, r.stdout + r.stderr
    return r.stdout + r.stderr


def make_version(url: str, repo: Path, version_id: str) -> None:
    """What the sample's google_ces_app_version does: an app version of the app as it is (a version
    is no file of a repo: cesync makes them with apply --snapshot). The app must exist first."""
    from google.cloud import ces_v1

    run("apply", "--dir", str(repo), "--env", "local", "--endpoint", url, "--auto-approve", "--target", "app")
    official_client(url).create_app_version(
        parent=app_name(repo),
        app_version=ces_v1.AppVersion(display_name="app version", description="example-app-version"),
        app_version_id=version_id,
    )


@dataclass(frozen=True)
class Sample:
    """How a sample maps to its fixture: what must exist before cesync applies it."""

    before: Callable[[str, Path], None] | None = None
    # Set when the sample's resources are outside any app (cesync manages apps): the fixture holds
    # only its cesync.yaml saying so, validate finds nothing in it, and nothing is applied.
    outside_the_app: str = ""


# Sample (file name without .tf.tmpl) -> what the test does beyond validate, apply, plan empty.
# A sample not named here needs nothing more. Every fixture's cesync.yaml says how it
# departs from the sample.
SAMPLES: dict[str, Sample] = {
    "ces_app_version_basic": Sample(before=lambda url, repo: make_version(url, repo, "app-version")),
    "ces_deployment_basic": Sample(before=lambda url, repo: make_version(url, repo, "app-version")),
    "ces_deployment_full": Sample(before=lambda url, repo: make_version(url, repo, "app-version")),
    "ces_security_settings_basic": Sample(
        outside_the_app="google_ces_security_settings: projects/*/locations/*/securitySettings"
    ),
}


@pytest.mark.parametrize("sample", LISTED, ids=[Path(p).name.removesuffix(".tf.tmpl") for p in LISTED])
def test_a_sample_validates_applies_and_then_plans_empty(sample: str, server: BackgroundServer, tmp_path: Path) -> None:
    fixture = fixture_of(sample)
    repo = tmp_path / fixture.name
    shutil.copytree(fixture, repo)
    url = server.url
    common = ("--dir", str(repo), "--env", "local", "--endpoint", url)
    how = SAMPLES.get(fixture.name, Sample())
    if how.outside_the_app:
        assert [p.name for p in repo.iterdir()] == ["cesync.yaml"]
        assert "outside any app" in (repo / "cesync.yaml").read_text(encoding="utf-8")
        assert "ok: 0 files valid" in run("validate", "--dir", str(repo))
        return
    assert "ok:" in run("validate", "--dir", str(repo))
    if how.before is not None:
        how.before(url, repo)
    first = json.loads(run("plan", *common, "--format", "json"))
    assert first["changes"] or how.before, "a sample creates something"
    run("apply", *common, "--auto-approve")
    after = json.loads(run("plan", *common, "--format", "json"))
    assert after["changes"] == [], [(c["action"], c["kind"], c["id"], c.get("update_mask")) for c in after["changes"]]
