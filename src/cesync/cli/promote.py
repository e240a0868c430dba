"""Promotion by commit: plan an environment from the commit another last applied."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from ..core.plan import Plan

from . import (
    EXIT_CHANGES,
    cli_vars,
    complete_env,
    dir_option,
    endpoint_option,
    err,
    format_option,
    handled,
    main,
    print_plan,
    save,
    scrubber,
    var_options,
)


@main.command()
@click.option(
    "--from", "source", required=True, help="The environment whose last applied commit is promoted.", shell_complete=complete_env
)
@click.option("--to", "target", required=True, help="The environment to plan (and then apply).", shell_complete=complete_env)
@dir_option
@endpoint_option
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Save the plan for 'cesync apply PLAN'.")
@format_option
@click.option("--detailed-exitcode", is_flag=True, help="Exit 2 when the plan has changes.")
@var_options
@handled
def promote(
    source: str,
    target: str,
    directory: Path,
    endpoint: str | None,
    out: Path | None,
    fmt: str,
    detailed_exitcode: bool,
    var_pairs: tuple[str, ...],
    var_files: tuple[Path, ...],
) -> None:
    """Plan TO from exactly the commit FROM last applied (its applied record), in that commit's tree."""
    from ..client import connect
    from ..errors import CesyncError
    from ..pipeline.context import open_context
    from ..pipeline.planning import make_plan
    from ..pipeline.promote import applied_commit, commit_tree
    from ..repo.repo import load_repo

    if source == target:
        raise CesyncError("--from and --to name the same environment")
    repo = load_repo(directory, resources=False)
    from ..pipeline.masking import remember_sensitive

    remember_sensitive(scrubber(), repo)  # before the command's first output
    src = repo.env(source)
    repo.env(target)  # an unknown --to is an error before any connection

    ignored: list[str] = []

    async def commit() -> str:
        async with connect(src, repo.root, override=endpoint, scrubber=scrubber()) as client:
            return await applied_commit(client, src, repo.config.owner or "", ignored)

    sha = asyncio.run(commit())
    for line in ignored:
        err(f"warning: {line}")
    with commit_tree(repo.root, sha, repo.config.promote.reviewedBranch) as folder:
        ctx = open_context(folder, target, endpoint, cli_vars(var_pairs, var_files), scrubber=scrubber())
        ctx.state_root, ctx.promotion = repo.root, (source, sha)

        async def plan_it() -> Plan:
            async with ctx.client() as client:
                return await make_plan(ctx, client)

        plan = asyncio.run(plan_it())
    if out:
        save(out, plan.to_json())
    print_plan(plan, fmt)
    if out and fmt == "text":
        err(f"saved plan to {out}: 'cesync apply {out}' applies it from commit {sha[:12]}")
    if detailed_exitcode and plan.has_changes:
        sys.exit(EXIT_CHANGES)
