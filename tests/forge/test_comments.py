"""The forge interface: which forge a CI job is in, and where its artifacts are (pure parts)."""

from __future__ import annotations

import pytest

from cesync.forge.comments import FORGES, find_target, run_link

GITHUB = {"GITHUB_REPOSITORY": "o/r", "GITHUB_TOKEN": "t"}
GITLAB = {"CI_PROJECT_ID": "42", "GITLAB_TOKEN": "t"}


@pytest.mark.parametrize(
    ("env", "provider"),
    [
        ({**GITHUB, **GITLAB, "GITLAB_CI": "true"}, "gitlab"),
        ({**GITHUB, **GITLAB, "GITHUB_ACTIONS": "true"}, "github"),
        ({**GITHUB, **GITLAB}, "github"),  # no CI says which: GitHub, as before forges were classes
    ],
)
def test_the_forge_is_the_ci_that_runs_the_job(env: dict[str, str], provider: str) -> None:
    assert find_target(env, number=7).provider == provider


@pytest.mark.parametrize(
    ("env", "link"),
    [
        (
            {"GITHUB_RUN_ID": "9", "GITHUB_REPOSITORY": "o/r"},
            "[this run's artifacts](https://github.com/o/r/actions/runs/9)",
        ),
        ({"CI_JOB_URL": "https://gitlab.example/j/1"}, "[this job's artifacts](https://gitlab.example/j/1/artifacts/browse)"),
        ({"GITHUB_RUN_ID": "9"}, None),
        ({}, None),
    ],
)
def test_run_link_comes_from_the_forge_whose_variables_are_set(env: dict[str, str], link: str | None) -> None:
    assert run_link(env) == link


def test_every_forge_implements_the_interface() -> None:
    for name, forge in FORGES.items():
        assert forge.name == name and not getattr(forge, "__abstractmethods__", None)
