"""validate shares work across environments, and what it finds is what rendering each environment alone finds."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cesync.api.resource import Resource
from cesync.errors import ConfigError, Problem
from cesync.repo.repo import Repo, load_repo
from tests.conftest import EXAMPLES

CONFIG = """version: 1
defaults: {project: p, location: us}
environments:
  dev: {app: a-dev, vars: {HOST: dev.example, ONLY_DEV: x}, urls: {api: http://dev.example}}
  prod: {app: a-prod, vars: {HOST: prod.example}}
  qa: {app: a-qa, vars: {HOST: qa.example, ONLY_DEV: y}}
"""
TOOLS = {
    "plain": "clientFunction: {name: plain, description: same everywhere}\n",
    "vars": "clientFunction: {name: v, description: 'calls ${HOST}'}\n",
    "missing": "clientFunction: {name: m, description: '${ONLY_DEV}'}\n",  # unset in prod
    "widget": "widgetTool:\n  name: w\n  dataMapping: {sourceToolName: {ref: tools/plain}}\n",  # the ref names each app
    "bad": "clientFunction: {name: 3, descripton: x}\n",
    "bad-code": "pythonFunction:\n  name: f\n  pythonCode: |\n    def g(:\n",
    "bad-in-prod": "clientFunction: {name: '${HOST}', description: 1}\n",
}
TOOLSETS = {  # $env_var has a url in dev only
    "api": "openApiToolset:\n  openApiSchema: |\n    openapi: 3.0.0\n    servers: [{url: $env_var}]\n    paths: {/x: {get: {}}}\n",
}


def write(root: Path) -> None:
    (root / "tools").mkdir()
    (root / "toolsets").mkdir()
    (root / "cesync.yaml").write_text(CONFIG)
    for folder, files in (("tools", TOOLS), ("toolsets", TOOLSETS)):
        for rid, text in files.items():
            (root / folder / f"{rid}.yaml").write_text(text)


def alone(repo: Repo, name: str) -> tuple[list[Resource], list[Problem]]:
    try:
        return repo.render(repo.env(name)), []
    except ConfigError as exc:
        return [], exc.problems


@pytest.fixture(params=["mixed", "example"])
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> Repo:
    if request.param == "example":
        root = tmp_path / "example"
        shutil.copytree(EXAMPLES / "support-bot", root)
        return load_repo(root)
    write(tmp_path)
    return load_repo(tmp_path)


def test_validate_finds_what_each_environment_finds_alone(repo: Repo) -> None:
    expected = sorted({p for name in repo.env_names for p in alone(repo, name)[1]})
    assert repo.validate() == expected
    assert repo.validate(list(reversed(repo.env_names))) == expected


def test_shared_renders_equal_renders_alone(repo: Repo) -> None:
    memo: dict = {}  # type: ignore[type-arg]
    for name in repo.env_names * 2:
        env = repo.env(name)
        try:
            shared: tuple[list[Resource], list[Problem]] = (repo.render(env, memo=memo), [])
        except ConfigError as exc:
            shared = ([], exc.problems)
        assert shared == alone(repo, name), name


def test_the_mixed_repo_has_problems_that_differ_by_environment(tmp_path: Path) -> None:
    """Guards the test above: it compares environments that really differ."""
    write(tmp_path)
    repo = load_repo(tmp_path)
    per_env = {name: set(alone(repo, name)[1]) for name in repo.env_names}
    assert per_env["dev"] != per_env["prod"] and per_env["dev"] != per_env["qa"]
    assert any("ONLY_DEV" in p.message for p in per_env["prod"])
    assert any("$env_var" in p.message for p in per_env["prod"])
