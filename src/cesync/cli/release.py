"""release: a new app version moved onto a deployment step by step, gated by evaluations."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import click

from ..errors import CesyncError
from . import EXIT_ERROR, cli_vars, dir_option, endpoint_option, env_option, err, handled, main, out, scrubber, var_options


@main.command()
@dir_option
@env_option
@endpoint_option
@click.option("--deployment", required=True, help="The deployment's id (deployments/ID.yaml, with releases/ID.yaml beside).")
@click.option(
    "--version", "version", help="The app version to release (id or full name); default: the env's last applied record."
)
@click.option("--dry-run", is_flag=True, help="Show the whole schedule from the deployment's split as it is; move nothing.")
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True, help="How to report."
)
@var_options
@handled
def release(
    directory: Path,
    env_name: str | None,
    endpoint: str | None,
    deployment: str,
    version: str | None,
    dry_run: bool,
    fmt: str,
    var_pairs: tuple[str, ...],
    var_files: tuple[Path, ...],
) -> None:
    """Move a deployment's traffic to a new app version step by step (releases/ID.yaml), gated by evaluations.

    Exits 1 when a gate fails (after rolling traffic back) or the release is refused."""
    from ..pipeline.context import open_context
    from ..pipeline.release import release as run_release
    from ..render.release import event_line, render_release_markdown, render_release_text, schedule_lines
    from ..repo.config import check_segment
    from ..repo.releases import load_release

    try:
        check_segment(deployment, "deployment")
    except ValueError as exc:
        raise CesyncError(f"--deployment: {exc}") from None
    ctx = open_context(directory, env_name, endpoint, cli_vars(var_pairs, var_files), scrubber=scrubber())
    _, spec = load_release(ctx.repo.root, deployment)
    if not any(d.kind.serves and d.id == deployment for d in ctx.desired):
        raise CesyncError(f"--deployment {deployment}: the repo has no deployments/{deployment}.yaml for '{ctx.env.name}'")

    def say(event: dict[str, Any]) -> None:
        if fmt == "text":
            out(event_line(event))

    async def run() -> dict[str, Any]:
        async with ctx.client() as client:
            result = await run_release(ctx, client, deployment, spec, version=version, dry_run=dry_run, say=say)
            return result.to_dict()

    data = asyncio.run(run())
    if fmt == "json":
        out(json.dumps(data, indent=2))
    elif fmt == "markdown":
        out(render_release_markdown(data), nl=False)
    elif dry_run:
        out(render_release_text(data, events=False), nl=False)
    else:
        for line in schedule_lines(data["schedule"]) if data["outcome"] == "already serving" else []:
            out(line)
        out(f"Release: {data['outcome']}.")
    if not data["ok"]:
        err(f"release of {data['target'].rsplit('/', 1)[-1]}: {data['outcome']}")
        sys.exit(EXIT_ERROR)
