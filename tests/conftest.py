from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from cesync.emulator.server import BackgroundServer

# No wall-clock limits on generated cases: the suite shares two cores with everything else on a CI
# machine, where a pure 2 ms example can take 300 ms; a deadline or the too_slow health check then
# fails a test for the machine's load, not for what it asserts. A test's own settings still win.
settings.register_profile("cesync", deadline=None, suppress_health_check=[HealthCheck.too_slow])
# The fast loop (pytest -m "not slow"): the same properties on fewer generated cases each.
settings.register_profile("fast", parent=settings.get_profile("cesync"), max_examples=10)
settings.load_profile("cesync")

# Whole-product runs (the command line end to end, the tour, Google's clients, a release, a guide
# followed in a copy of the source): marked slow, so `pytest -m "not slow"` is the one-minute loop
# over the pure modules (api, models, core, render, the repo's reading). By file, each with what
# makes it slow; the whole suite (CI) runs everything.
SLOW_FILES = {
    "tests/test_gitops.py": "the product as a team runs it, command by command",
    "tests/test_gitops_promises.py": "the product as a team runs it, command by command",
    "tests/test_whole_app_e2e.py": "a whole app through Google's client",
    "tests/test_registry_guide.py": "the guide's edits made in a copy of src/cesync, then the commands run",
    "tests/test_release.py": "builds the wheel and runs the tour from it",
    "tests/docs/test_examples.py": "every command example of the docs, run",
    "tests/docs/test_readme.py": "the README's tour, run",
    "tests/cli/test_cli.py": "commands in subprocesses against an emulator, Ctrl-C at each moment",
    "tests/emulator/test_scrapi.py": "Google's cxas-scrapi against the emulator",
    "tests/repo/test_wholeload.py": "generated repos validated twice around each change",
    "tests/repo/test_wholerender.py": "generated repos validated twice around each change",
    "tests/repo/test_wholecache_property.py": "generated repos validated with and without the cache after each edit",
    "tests/repo/test_parallel.py": "generated repos rendered in forked processes",
}
SLOW_FIXTURES = {"tour"}  # the tour's 20 s run
# Single tests of a pure module whose generated cases cost seconds each: the full suite runs them;
# the fast loop keeps the module's other tests.
SLOW_TESTS = {
    "tests/core/test_plan_binding.py::test_every_kind_of_edit_is_refused_before_any_connection": "40 saved plans checked",
    "tests/core/test_yamlfile.py::test_an_alias_bomb_is_refused_before_it_expands": "30 bombs parsed to the limit",
    "tests/core/test_diff.py::test_the_mask_of_generated_tools_is_complete_and_minimal": "generated tools diffed",
    "tests/core/test_diff.py::test_the_mask_of_every_other_kind_is_complete_and_minimal": "generated bodies diffed",
    "tests/core/test_order.py::test_order_is_a_valid_apply_or_a_true_refusal": "generated apps applied in order",
    "tests/api/test_discoverydoc.py::test_a_document_with_many_additions_merges_in_linear_time": "large documents timed",
    "tests/repo/test_fmt_kinds.py::test_fmt_orders_every_kind_as_files_write_it_and_keeps_style_and_comments": "every kind",
    "tests/core/test_yamlout.py::test_written_yaml_reads_back_exactly": "generated documents written and read",
    "tests/core/test_order.py::test_nodes_that_neither_wait_nor_are_waited_for_leave_the_placement_unchanged": "generated apps ordered twice",
}
# Whole folders whose subject is I/O or a server: the pipelines and commands against the emulator,
# the emulator itself, the HTTP client and forges against loopback servers, the sync of an app,
# Google's clients and Terraform's samples, the docs' examples; and a few files that do the same.
SLOW_DIRS = {
    "tests/pipeline/": "each pipeline against the emulator",
    "tests/emulator/": "the emulator over HTTP, its sandbox's processes",
    "tests/cli/": "the commands end to end",
    "tests/sync/": "an app read, exported and recorded through the emulator",
    "tests/client/": "the HTTP client against loopback servers",
    "tests/forge/": "the forges' APIs on loopback",
    "tests/property/": "generated bodies applied and read back through Google's client",
    "tests/evidence/": "Google's documents and Terraform's samples through the emulator",
    "tests/docs/": "the docs' pages and examples, run",
    "tests/tooltests/test_run.py": "tool tests run against the emulator and in the sandbox",
    "tests/repo/test_cache.py": "generated repos planned warm, cold and without the cache",
    "tests/repo/test_rendercache.py": "an applied app planned warm and without the cache, edited on both sides",
    "tests/repo/test_apidescription.py": "newer descriptions validated, applied and planned",
    "tests/core/test_channels.py": "each command that prints a sensitive value's neighbours, run",
}


def pytest_configure(config: pytest.Config) -> None:
    if "not slow" in (config.getoption("markexpr") or ""):
        settings.load_profile("fast")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        where = Path(str(item.path)).resolve().relative_to(ROOT).as_posix()
        slow_dir = any(where.startswith(d) for d in SLOW_DIRS)
        test = f"{where}::{getattr(item, 'originalname', item.name)}"
        if where in SLOW_FILES or slow_dir or test in SLOW_TESTS or SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


# No test reaches Google: a repo with a field cesync does not know never fetches the live discovery
# document (cesync.repo.apidescription); the tests of that fetch serve one on loopback.
os.environ["CESYNC_OFFLINE"] = "1"

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
APP = "projects/p/locations/us/apps/a"


@pytest.fixture
def emulator() -> Iterator[BackgroundServer]:
    with BackgroundServer(auto_create_apps=True) as server:  # these tests are about other things
        yield server


@pytest.fixture(scope="session")
def tour(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """examples/support-bot/tour.sh as the README runs it, its output and errors each sent to a file
    (no terminal, NO_COLOR unset): one run of its 20 s serves every test of what it printed. Under
    xdist the workers share it through their common temporary folder, the first to ask runs it."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # a worker's basetemp is one of the run's
    out, err, code = shared / "tour.out", shared / "tour.err", shared / "tour.rc"
    with (shared / "tour.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes; a second worker waits here for the first's run
        if not code.exists():
            env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
            env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
            with out.open("w") as stdout, err.open("w") as stderr:
                done = subprocess.run(
                    ["bash", str(EXAMPLES / "support-bot" / "tour.sh")], stdout=stdout, stderr=stderr, env=env, timeout=600
                )
            code.write_text(str(done.returncode))
    args = ["bash", "examples/support-bot/tour.sh"]
    return subprocess.CompletedProcess(args, int(code.read_text()), out.read_text(), err.read_text())
