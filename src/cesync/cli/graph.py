"""cesync graph: the repo (or the live app) as a picture of its resources and references."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from . import cli_vars, dir_option, endpoint_option, err, handled, main, out, scrubber, var_options

if TYPE_CHECKING:
    from ..api.resource import Resource
    from ..core.graph import Key

GRAPH_FORMATS = ("mermaid", "dot", "json")


@main.command()
@dir_option
@click.option("--env", "env_name", help="The environment to render the repo for (default: CESYNC_ENV, else the first).")
@endpoint_option
@click.option("--live", is_flag=True, help="Draw the environment's app as it runs, read from CES, not the repo.")
@click.option("--format", "fmt", type=click.Choice(GRAPH_FORMATS), default="mermaid", show_default=True, help="How to draw it.")
@click.option(
    "--focus",
    "focus",
    multiple=True,
    metavar="COLLECTION/ID",
    help="Only the neighbourhood of this resource (tools/ID, agents/ID, app...): what uses it and what it uses (repeatable).",
)
@click.option("--depth", type=click.IntRange(min=1), help="With --focus: how many links away to go (default: all).")
@click.option(
    "--max-nodes",
    type=click.IntRange(min=0),
    default=80,
    show_default=True,
    help="Draw at most this many resources, the focused ones first, and say how many more (0: all).",
)
@var_options
@handled
def graph(
    directory: Path,
    env_name: str | None,
    endpoint: str | None,
    live: bool,
    fmt: str,
    focus: tuple[str, ...],
    depth: int | None,
    max_nodes: int,
    var_pairs: tuple[str, ...],
    var_files: tuple[Path, ...],
) -> None:
    """Draw the app's resources and the references between them, in Mermaid, DOT or JSON.

    An arrow A -> B says that A uses B: the app names its root agent, an agent its tools,
    toolsets, child agents and guardrails, a golden the tools it calls, a deployment the app's
    draft or the version it serves. Offline, it draws the repo as rendered for one environment;
    with --live, the app as CES holds it. Paste Mermaid into Markdown (GitHub and GitLab draw
    it) or pipe DOT into Graphviz: cesync graph --format dot | dot -Tsvg > app.svg
    """
    from ..core.graph import build_graph
    from ..render.graph import to_dot, to_json, to_mermaid
    from ..repo.repo import load_repo

    if depth is not None and not focus:
        raise click.UsageError("--depth goes with --focus")
    repo = load_repo(directory)
    repo.overrides = cli_vars(var_pairs, var_files)
    from ..pipeline.masking import remember_sensitive

    remember_sensitive(scrubber(), repo)  # before the command's first output
    name = env_name or os.environ.get("CESYNC_ENV") or (repo.env_names[0] if repo.env_names else None)
    env = repo.env(name)
    resources = _live(directory, env.name, endpoint, repo.overrides) if live else repo.render(env)
    drawn = build_graph(resources, env.parent)
    marks: dict[Key, str] = {}
    if focus:
        from ..api.kinds import KINDS
        from ..core.targets import resolve_targets

        keys = sorted(resolve_targets(focus, (k for k in drawn.nodes if k[0] in KINDS), "--focus") or ())
        drawn = drawn.around(keys, depth)
        marks = dict.fromkeys(keys, "focus")
    limit = max_nodes or None
    if fmt == "json":
        out(to_json(drawn, marks=marks), nl=False)
    else:
        out((to_mermaid if fmt == "mermaid" else to_dot)(drawn, marks=marks, limit=limit), nl=False)
    if limit is not None and len(drawn.nodes) > limit and fmt != "json":
        err(f"note: {len(drawn.nodes) - limit} of {len(drawn.nodes)} resources not drawn; --max-nodes 0 draws all")


def _live(directory: Path, env_name: str, endpoint: str | None, variables: dict[str, str]) -> list[Resource]:
    from ..pipeline.context import open_context
    from ..sync.remote import read_existing

    ctx = open_context(directory, env_name, endpoint, variables, scrubber=scrubber())

    async def run() -> list[Resource]:
        async with ctx.client() as client:
            return await read_existing(client, ctx.env.parent, writes=False)  # graph only draws

    return asyncio.run(run())
