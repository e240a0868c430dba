"""cesync matrix's walk: a folder that vanishes while it walks (another process cleaning up) is left out."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cesync.core.scrubber import Scrubber
from cesync.pipeline.discovery import find_apps
from tests.helpers import cesync_in_process

CONFIG = "version: 1\nenvironments:\n  dev: {endpoint: embedded, project: p, location: us, app: a}\n"
segments = st.sampled_from(["apps", "a", "b", "team-x", "svc"])
folders = st.lists(st.lists(segments, min_size=1, max_size=3).map(tuple), min_size=1, max_size=6, unique=True)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(apps=folders, data=st.data())
def test_a_folder_that_vanishes_during_the_walk_is_left_out(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, apps: list[tuple[str, ...]], data: Any
) -> None:
    root = tmp_path_factory.mktemp("walk")
    for app in apps:
        (root.joinpath(*app)).mkdir(parents=True, exist_ok=True)
        (root.joinpath(*app) / "cesync.yaml").write_text(CONFIG)
    every = sorted({app[:i] for app in apps for i in range(1, len(app) + 1)})
    gone = data.draw(st.sampled_from(every))
    victim = root.joinpath(*gone)
    real = os.scandir

    def scandir(path: Any = ".") -> Any:  # the folder is removed just as the walk comes to list it
        if not isinstance(path, int) and Path(path) == victim and victim.exists():
            shutil.rmtree(victim)
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    found = {e["dir"] for e in find_apps(root, scrubber=Scrubber())}
    monkeypatch.undo()
    kept = {"/".join(app) for app in apps if app[: len(gone)] != gone}
    assert found <= kept | {"/".join(gone)} and kept <= found, (found, kept, gone)


def test_matrix_of_a_root_that_is_gone_is_an_error_not_a_crash(tmp_path: Path) -> None:
    result = cesync_in_process("matrix", "--root", str(tmp_path / "nothing"))
    assert result.returncode == 1 and "no cesync.yaml" in result.stderr
