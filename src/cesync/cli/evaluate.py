"""cesync eval: run the repo's evaluations in the app, gate on the metrics thresholds.

Exit codes: 0 every evaluation chosen passed (at --min-pass-rate of its runs); 1 any
failed, errored, or was not evaluated (a result CES reports SKIPPED is no pass), or the
command could not run (no evaluations, an unknown tag, an evaluation not in the app, the
operation failed, the API refused); 130 interrupted.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import click

from ..core.evalreport import Report
from ..errors import CesyncError
from . import (
    EXIT_ERROR,
    cli_vars,
    dir_option,
    endpoint_option,
    env_option,
    err,
    handled,
    load_plan,
    main,
    out,
    save,
    scrubber,
    var_options,
)

FORMATS = ("text", "json", "markdown")


@main.command("eval")
@dir_option
@env_option
@endpoint_option
@click.option("--tag", "tags", multiple=True, help="Only evaluations with this tag (repeatable: any of them).")
@click.option(
    "--runs",
    type=click.IntRange(1, 100),
    default=1,
    show_default=True,
    help="Run each evaluation this many times and report its pass rate (agents are not deterministic).",
)
@click.option(
    "--min-pass-rate",
    type=click.FloatRange(0.0, 1.0),
    default=1.0,
    show_default=True,
    help="With --runs: an evaluation passes when at least this share of its runs pass.",
)
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), help="Also write the results as JUnit XML here.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True, help="How to report the results.")
@click.option(
    "--preview", "preview_name", metavar="NAME", help="Run in the environment's preview app NAME (see 'cesync preview')."
)
@click.option(
    "--affected-by",
    "affected_by",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="PLANFILE",
    help="Only the evaluations a saved plan (plan --out) puts at risk: those that exercise a resource it changes.",
)
@var_options
@handled
def eval_cmd(
    directory: Path,
    env_name: str | None,
    endpoint: str | None,
    tags: tuple[str, ...],
    runs: int,
    min_pass_rate: float,
    junit: Path | None,
    fmt: str,
    preview_name: str | None,
    affected_by: Path | None,
    var_pairs: tuple[str, ...],
    var_files: tuple[Path, ...],
) -> None:
    """Run the repo's evaluations (evaluations/*.yaml) in the environment's app; exit 1 when any misses its thresholds."""
    from ..pipeline.context import open_context
    from ..pipeline.evaluate import choose, evaluate
    from ..render.evaluations import render_eval, render_eval_junit

    only: list[str] | None = None
    if affected_by is not None:
        saved = load_plan(affected_by)
        only = sorted({e for found in saved.affected.values() for e in found.get("evaluations", [])})
        if not only:
            out(f"{affected_by} puts no evaluation at risk: nothing to run")
            return
    ctx = open_context(directory, env_name, endpoint, cli_vars(var_pairs, var_files), preview=preview_name, scrubber=scrubber())
    choose(ctx.desired, tags, only)  # no evaluations, an unknown tag: said before anything is asked of the API
    if runs == 1 and min_pass_rate != 1.0:
        raise CesyncError("--min-pass-rate needs --runs N (N > 1): one run passes or not")

    async def run() -> Report:
        async with ctx.client() as client:
            return await evaluate(ctx, client, tags=tags, runs=runs, min_pass_rate=min_pass_rate, warn=err, only=only)

    report = asyncio.run(run())
    out(render_eval(report, fmt), nl=False)
    if junit:
        save(junit, render_eval_junit(report))
    if not report.passed:
        sys.exit(EXIT_ERROR)
