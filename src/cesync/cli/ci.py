"""CI helpers: the sticky plan comment and the matrix of apps."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from ..core.evalreport import Report
from ..errors import CesyncError
from ..forge.comments import FORGES, find_target, run_link, upsert_comment
from ..pipeline.discovery import find_apps
from ..render import MARKER, render_markdown
from ..render.markdown import GITHUB_COMMENT_LIMIT
from . import (
    handled,
    load_plan,
    main,
    out,
    scrubber,
)


@main.command()
@click.argument("planfile", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--provider", type=click.Choice(list(FORGES)), help="Default: gitlab under GitLab CI, else github.")
@click.option("--pr", "number", type=int, help="The pull/merge request (default: the one this CI run is for).")
@click.option(
    "--max-chars",
    type=click.IntRange(1000),
    default=GITHUB_COMMENT_LIMIT,
    show_default=True,
    help="Cut the comment to this length (whole resource sections, with a note where the full plan is).",
)
@click.option("--full-plan", help="Where the full plan is, for the note on a cut comment (default: the CI run's artifacts).")
@handled
def comment(planfile: Path, provider: str | None, number: int | None, max_chars: int, full_plan: str | None) -> None:
    """Keep one sticky plan comment per environment and app on the pull/merge request.

    PLANFILE may also be a report of 'cesync eval --format json': its summary is kept in a
    sticky comment of its own beside the plan's.
    """
    report = _eval_report(planfile)
    if report is not None:
        from ..render.evaluations import EVAL_MARKER, render_eval_markdown

        target = find_target(os.environ, provider=provider, number=number)
        body = render_eval_markdown(report)
        if len(body) > max_chars:
            body = body[: max_chars - 80].rsplit("\n", 1)[0] + "\n\n(cut to fit: the whole report is in the CI job's output)\n"
        result = upsert_comment(target, EVAL_MARKER.format(env=report.environment, app=report.app), body, scrubber=scrubber())
        out(f"{result} the evaluation comment for '{report.environment}' on #{target.number}")
        return
    saved = load_plan(planfile)
    target = find_target(os.environ, provider=provider, number=number)
    body = render_markdown(saved, max_chars=max_chars, full_plan=full_plan or run_link(os.environ) or "the CI job's artifacts")
    result = upsert_comment(target, MARKER.format(env=saved.environment, app=saved.app), body, scrubber=scrubber())
    out(f"{result} the plan comment for '{saved.environment}' on #{target.number}")


@main.command()
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="The folder to search for cesync.yaml files.",
)
@click.option("--env", "envs", multiple=True, help="Only these environments.")
@handled
def matrix(root: Path, envs: tuple[str, ...]) -> None:
    """List every (app folder, environment) under ROOT as JSON, for a CI matrix."""
    entries = find_apps(root, set(envs) or None, scrubber=scrubber())
    if not entries:
        raise CesyncError(f"no cesync.yaml{' with environment ' + ', '.join(envs) if envs else ''} under {root}")
    out(json.dumps(entries))


def _eval_report(path: Path) -> Report | None:
    """The evaluation report in path, or None when it is something else (a plan)."""
    from ..core.evalreport import REPORT_FORMAT

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None  # load_plan says what is wrong with the file
    if not isinstance(data, dict) or data.get("format") != REPORT_FORMAT:
        return None
    try:
        return Report.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise CesyncError(f"{path}: not a readable evaluation report ({type(exc).__name__}: {exc})") from None
