"""${NAME} as an attacker writes it: a repo file must not be able to read the CI job's environment.

The process environment gives a variable only as CESYNC_VAR_NAME. A pull request's author
writes every repo file, so ${GITHUB_TOKEN} (or any secret's name) must stay unresolved,
reported with its position, and its value must reach no output channel.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cesync.errors import ConfigError
from cesync.repo.repo import VAR_ENV_PREFIX, load_repo
from tests.helpers import cesync, make_repo

EXAMPLES = int(os.environ.get("CESYNC_HYPOTHESIS_EXAMPLES", "60"))
names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,40}", fullmatch=True)
# A marker no message could contain by chance, then anything a secret may hold.
secrets = st.builds(
    "{}{}".format, st.just("s3cr3t-"), st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=30)
)
plain_values = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=30)
CONFIG = "version: 1\nenvironments:\n  local: {endpoint: embedded, project: p, location: us, app: a%s}\n"
# ${...} sits at line 3, column 16 (1-based) of the tool file.
TOOL = "clientFunction:\n  name: %s\n  description: 'x ${%s} y'\n"


@contextmanager
def process_env(values: dict[str, str], unset: str) -> Iterator[None]:
    with mock.patch.dict(os.environ, values):
        os.environ.pop(unset, None)
        yield


def repo_at(tmp: Path, name: str, vars_: str = "") -> Path:
    root = tmp / "repo"
    (root / "tools").mkdir(parents=True, exist_ok=True)
    (root / "cesync.yaml").write_text(CONFIG % vars_, encoding="utf-8")
    (root / "tools" / "leak.yaml").write_text(TOOL % ("leak", name), encoding="utf-8")
    return root


def render_description(root: Path) -> str:
    repo = load_repo(root)
    (tool,) = repo.render(repo.env("local"))
    return str(tool.body["clientFunction"]["description"])


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=names, secret=secrets)
def test_a_plain_process_variable_is_never_read(tmp_path: Path, name: str, secret: str) -> None:
    root = repo_at(tmp_path, name)
    with process_env({name: secret}, unset=VAR_ENV_PREFIX + name), pytest.raises(ConfigError) as caught:
        render_description(root)
    (problem,) = caught.value.problems
    assert (problem.file, problem.line, problem.col) == ("tools/leak.yaml", 3, 16)
    assert f"variable '{name}' is not set" in problem.message
    assert f"{VAR_ENV_PREFIX}{name}" in problem.message
    assert secret not in str(caught.value) and secret not in problem.message


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=names, value=plain_values, in_repo=st.none() | plain_values, secret=secrets)
def test_cesync_var_gives_the_value_and_wins_over_the_repo(
    tmp_path: Path, name: str, value: str, in_repo: str | None, secret: str
) -> None:
    vars_ = "" if in_repo is None else f", vars: {{{name}: {_flow(in_repo)}}}"
    root = repo_at(tmp_path, name, vars_)
    with process_env({name: secret, VAR_ENV_PREFIX + name: value}, unset=""):
        assert render_description(root) == f"x {value} y"
    with process_env({name: secret}, unset=VAR_ENV_PREFIX + name):
        if in_repo is not None:  # without CESYNC_VAR_, the repo's own value; never the plain one
            assert render_description(root) == f"x {in_repo} y"


def _flow(value: str) -> str:
    """A YAML double-quoted scalar for any text."""
    return '"' + "".join(c if c.isalnum() or c in " -_.,;" else f"\\U{ord(c):08x}" for c in value) + '"'


CI_SECRETS = {"GITHUB_TOKEN": "ghs_s3cr3tT0k3n", "GOOGLE_APPLICATION_CREDENTIALS": "/s3cr3t/key.json", "SOME_SECRET": "s3cr3t"}


def test_no_output_channel_shows_a_ci_secret(tmp_path: Path) -> None:
    """End to end: plan in every format, the saved plan, validate, apply."""
    root = make_repo(tmp_path, {f"tools/{name.lower()}.yaml": TOOL % (name.lower(), name) for name in CI_SECRETS})
    env = dict(CI_SECRETS)
    runs = [
        *(cesync("plan", "--dir", str(root), "--format", fmt, env=env) for fmt in ("text", "markdown", "json")),
        cesync("plan", "--dir", str(root), "--out", str(tmp_path / "saved.json"), env=env),
        cesync("validate", "--dir", str(root), env=env),
        cesync("apply", "--dir", str(root), "--auto-approve", env=env),
    ]
    for run in runs:
        assert run.returncode == 1, run.args
        for name, secret in CI_SECRETS.items():
            assert secret not in run.stdout + run.stderr
            assert re.search(rf"tools/{name.lower()}\.yaml:3:16: .*variable '{name}' is not set", run.stderr), run.stderr
            assert f"{VAR_ENV_PREFIX}{name}" in run.stderr
    assert not (tmp_path / "saved.json").exists()

    # The operator's CESYNC_VAR_ values are what the plan shows; the plain variables still are not.
    given_ = {VAR_ENV_PREFIX + name: f"from-operator-{i}" for i, name in enumerate(CI_SECRETS)}
    planned = cesync("plan", "--dir", str(root), "--format", "json", env={**env, **given_})
    assert planned.returncode == 0, planned.stderr
    assert all(f"x from-operator-{i} y" in planned.stdout for i in range(len(CI_SECRETS)))
    assert not any(secret in planned.stdout + planned.stderr for secret in CI_SECRETS.values())
