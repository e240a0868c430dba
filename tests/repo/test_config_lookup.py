"""cesync.yaml: a misspelt key gets the key it meant, and the file is found from any folder below it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cesync.errors import CesyncError, ConfigError
from cesync.repo.config import Config
from cesync.repo.loading import keys_at
from cesync.repo.repo import find_root, load_repo
from tests.helpers import cesync_in_process, make_repo

CONFIG = """version: 1
prune: false
defaults:
  project: p
  location: us
  vars: {A: b}
  sensitive: [A]
safety:
  maxChangeFraction: 0.3
  minResources: 10
environments:
  local:
    endpoint: embedded
    app: a
    vars: {B: c}
    urls: {x: http://127.0.0.1:1}
    prune: false
    impersonateServiceAccount: x@p.iam.gserviceaccount.com
    quotaProject: p
"""
# Each key above as (path of its mapping, key), from the model's own key table.
KEYS = [((), k) for k in ("version", "prune", "defaults", "safety", "environments")]
KEYS += [(("defaults",), k) for k in ("project", "location", "vars", "sensitive")]
KEYS += [(("safety",), k) for k in ("maxChangeFraction", "minResources")]
KEYS += [
    (("environments", "local"), k)
    for k in ("endpoint", "app", "vars", "urls", "prune", "impersonateServiceAccount", "quotaProject")
]


def typo(word: str, how: int, at: int) -> str:
    i = 1 + at % (len(word) - 2)
    return word[:i] + word[i + 1 :] if how == 0 else word[:i] + word[i + 1] + word[i] + word[i + 2 :]


def test_the_key_table_is_the_models() -> None:
    for owner, key in KEYS:
        assert key in keys_at(Config, owner), (owner, key)
    assert "enviroments" not in keys_at(Config, ())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.sampled_from(KEYS), how=st.integers(0, 1), at=st.integers(0, 30))
def test_a_misspelt_key_gets_the_key_it_meant(
    tmp_path_factory: pytest.TempPathFactory, which: tuple[tuple[str, ...], str], how: int, at: int
) -> None:
    owner, key = which
    wrong = typo(key, how, at)
    if wrong == key or wrong in keys_at(Config, owner):
        return
    indent = "  " * len(owner)
    lines = CONFIG.splitlines(keepends=True)
    start = 0
    for depth, name in enumerate(owner):  # the line of the owning mapping, then the key within it
        start = next(i for i in range(start, len(lines)) if lines[i].startswith("  " * depth + f"{name}:"))
    n = next(i for i in range(start, len(lines)) if lines[i].startswith(f"{indent}{key}:"))
    lines[n] = lines[n].replace(f"{key}:", f"{wrong}:", 1)
    root = make_repo(tmp_path_factory.mktemp("c"), {"cesync.yaml": "".join(lines)})
    with pytest.raises(ConfigError) as exc:
        load_repo(root)
    [problem] = [p for p in exc.value.problems if p.file == "cesync.yaml"]
    assert problem.line == n + 1 and problem.message == f"unknown field '{wrong}'; did you mean '{key}'?", problem


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    below=st.lists(st.sampled_from(["tools", "agents", "a", "b-c", "x.y"]), min_size=0, max_size=4),
    git_at=st.one_of(st.none(), st.integers(0, 4)),
)
def test_found_from_any_folder_below_it(tmp_path_factory: pytest.TempPathFactory, below: list[str], git_at: int | None) -> None:
    """As git finds .git: the nearest cesync.yaml above, never one above the top of a git work tree."""
    top = tmp_path_factory.mktemp("layout")
    root = make_repo(top, {})
    deep = root.joinpath(*below)
    deep.mkdir(parents=True, exist_ok=True)
    placed = git_at is not None and git_at <= len(below)
    if placed:  # a work tree inside the app folder (or the app's own)
        root.joinpath(*below[:git_at], ".git").mkdir(exist_ok=True)
    inside = not placed or git_at == 0
    if inside:
        assert find_root(deep) == root
        result = cesync_in_process("validate", "--dir", str(deep))
        assert result.returncode == 0 and "1 file valid" in result.stdout, result.stdout + result.stderr
    else:
        with pytest.raises(CesyncError, match=r"no cesync\.yaml in .* or any folder above it"):
            find_root(deep)


def test_without_one_the_error_says_where_it_looked(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    result = cesync_in_process("validate", "--dir", str(tmp_path))
    assert result.returncode == 1 and f"no cesync.yaml in {tmp_path} or any folder above it" in result.stderr
    assert (
        "cesync.yaml:1:1" not in result.stderr and "problem found" not in result.stderr
    )  # no position in a file that is not there
