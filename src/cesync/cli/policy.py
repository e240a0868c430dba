"""policy test: the repo's policies against their own tests (no app, no connection)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..api.words import count
from ..errors import CesyncError
from . import EXIT_ERROR, dir_option, handled, main, out


@main.group()
def policy() -> None:
    """The repo's policy checks (the folder 'policies' in cesync.yaml names)."""


@policy.command("test")
@dir_option
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="How to report the results."
)
@handled
def policy_test(directory: Path, fmt: str) -> None:
    """Run the tests of the repo's policy files; exit 1 when any fails."""
    from ..core.policy import run_tests
    from ..repo.policies import load_policies
    from ..repo.repo import load_repo

    repo = load_repo(directory, resources=False)
    if not repo.config.policies:
        raise CesyncError("cesync.yaml names no policy folder: add 'policies: policies' (a folder of policy files)")
    policies = load_policies(repo.root, repo.config.policies)
    results = run_tests(policies.rules, policies.files)
    failed = [r for r in results if not r.ok]
    if fmt == "json":
        out(
            json.dumps(
                {"passed": len(results) - len(failed), "failed": len(failed), "tests": [r.__dict__ for r in results]}, indent=2
            )
        )
    else:
        for r in results:
            out(f"{'PASS' if r.ok else 'FAIL'} {r.source}: {r.name}" + (f": {r.detail}" if r.detail else ""))
        out(f"{count(len(results), 'test')}, {len(failed)} failed ({count(len(policies.rules), 'rule')})")
    if not results:
        raise CesyncError(f"no policy tests in {repo.config.policies}: add 'tests:' to a policy file")
    if failed:
        sys.exit(EXIT_ERROR)
