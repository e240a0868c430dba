"""Preview apps: apply the repo to a throw-away app beside an environment's, and delete it."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import click

from ..errors import CesyncError
from . import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    cli_vars,
    dir_option,
    endpoint_option,
    env_option,
    handled,
    main,
    out,
    print_plan,
    scrubber,
    var_options,
)


@main.command()
@click.option("--name", required=True, help="The preview's name (a pull request number: pr-123); its app is APP-NAME.")
@dir_option
@env_option
@endpoint_option
@click.option("--delete", is_flag=True, help="Delete the preview app instead (only an app this preview made).")
@click.option("--auto-approve", is_flag=True, help="Do not ask for confirmation (required without a terminal).")
@click.option(
    "--parallelism", type=click.IntRange(1, 64), default=8, show_default=True, help="At most this many API calls at once."
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="How to report the result."
)
@var_options
@handled
def preview(
    name: str,
    directory: Path,
    env_name: str | None,
    endpoint: str | None,
    delete: bool,
    auto_approve: bool,
    parallelism: int,
    fmt: str,
    var_pairs: tuple[str, ...],
    var_files: tuple[Path, ...],
) -> None:
    """Apply the repo to a throw-away app beside the environment's (APP-NAME), or --delete it."""
    if delete:
        _delete(name, directory, env_name, endpoint, fmt)
        return
    from ..client.apps import get_app
    from ..pipeline.context import open_context
    from ..pipeline.planning import make_plan
    from ..pipeline.preview import check_preview, mark_desired
    from .core import _run_apply

    ctx = open_context(directory, env_name, endpoint, cli_vars(var_pairs, var_files), preview=name, scrubber=scrubber())
    ctx.desired = mark_desired(ctx.desired, ctx.env, name)
    parent = ctx.env.parent

    async def run() -> object:
        async with ctx.client(max_connections=max(parallelism * 2, 8)) as client:
            check_preview(await get_app(client, parent), ctx.env, name, parent)
            # the preview mirrors the repo: what the repo no longer has goes (the app is the preview's own)
            plan = await make_plan(
                ctx, client, prune=True, prune_unmanaged=True
            )  # a preview app is all cesync's: it mirrors the repo
            if fmt == "text":
                print_plan(plan, "text")
            if not plan.has_changes:
                return None
            if not auto_approve:
                if not sys.stdin.isatty():
                    raise CesyncError("no terminal to confirm on: pass --auto-approve to apply without asking")
                if not click.confirm(f"Apply to the preview app {parent}?", default=False):
                    raise CesyncError("preview cancelled; nothing was changed")
            return await _run_apply(client, plan, parallelism, False, fmt)

    from ..pipeline.apply import ApplyResult

    result = asyncio.run(run())
    if fmt == "json":
        data = result.to_dict() if isinstance(result, ApplyResult) else ApplyResult(ctx.env.name, parent).to_dict()
        out(json.dumps({**data, "preview": name}, indent=2))
    elif isinstance(result, ApplyResult):
        out(("Interrupted: " if result.interrupted else "Preview: ") + result.summary() + f" in {parent}.")
    else:
        out(f"Preview: {parent} matches the repo.")
    if isinstance(result, ApplyResult) and not result.ok:
        sys.exit(EXIT_INTERRUPTED if result.interrupted else EXIT_ERROR)


def _delete(name: str, directory: Path, env_name: str | None, endpoint: str | None, fmt: str) -> None:
    from ..client import connect
    from ..pipeline.preview import delete_preview, preview_env
    from ..repo.repo import load_repo

    repo = load_repo(directory, resources=False)
    from ..pipeline.masking import remember_sensitive

    remember_sensitive(scrubber(), repo)  # before the command's first output
    env = preview_env(repo.env(env_name), name)

    async def run() -> bool:
        async with connect(env, repo.root, override=endpoint, scrubber=scrubber()) as client:
            return await delete_preview(client, env, name, env.parent)

    deleted = asyncio.run(run())
    if fmt == "json":
        out(json.dumps({"preview": name, "app": env.parent, "deleted": deleted}, indent=2))
    else:
        out(f"Deleted the preview app {env.parent}." if deleted else f"No preview app {env.parent}: nothing to delete.")
