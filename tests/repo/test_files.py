"""repo/files.py: resolved_below gives what Path.resolve() gives, one lstat per part below the root."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cesync.repo.files import resolved_below

PARTS = ["..", ".", "tools", "schemas", "a.yaml", "out", "up", "loop", "self", "dangling", "file-link", "deep", "missing"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A resolved repo with every kind of link an include can meet, and a folder outside it."""
    top = tmp_path_factory.mktemp("links").resolve()
    root, outside = top / "repo", top / "outside"
    for folder in (root / "tools", root / "schemas" / "deep", outside / "schemas"):
        folder.mkdir(parents=True)
    for file in (root / "schemas" / "a.yaml", outside / "schemas" / "a.yaml", outside / "a.yaml"):
        file.write_text("x: 1\n")
    (root / "out").symlink_to(outside)  # a folder out of the repo
    (root / "tools" / "up").symlink_to("..")  # relative, back to the root
    (root / "schemas" / "loop").symlink_to("loop")  # a link to itself
    (root / "schemas" / "self").symlink_to(".")
    (root / "schemas" / "dangling").symlink_to(root / "nowhere")
    (root / "schemas" / "file-link").symlink_to(outside / "a.yaml")
    (root / "tools" / "a.yaml").symlink_to("../schemas/a.yaml")
    return root


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    base=st.sampled_from(["", "tools", "schemas", "tools/up", "out", "missing"]), rel=st.lists(st.sampled_from(PARTS), max_size=6)
)
def test_resolved_below_is_resolve(tree: Path, base: str, rel: list[str]) -> None:
    path = tree / base / "/".join(rel) if rel else tree / base
    assert _outcome(resolved_below, path, tree) == _outcome(lambda p, _: p.resolve(), path, tree)


def _outcome(resolve: Callable[[Path, Path], Path], path: Path, root: Path) -> object:
    """The path, or the error (a link loop is resolve()'s RuntimeError either way)."""
    try:
        return resolve(path, root)
    except (OSError, RuntimeError) as exc:
        return (type(exc), str(exc))


def test_a_path_not_below_the_root_is_resolved_whole(tree: Path) -> None:
    for path in (Path("/etc/hosts"), tree.parent / "outside" / "a.yaml", tree.parent / "repo-twin" / "x"):
        assert resolved_below(path, tree) == path.resolve()
