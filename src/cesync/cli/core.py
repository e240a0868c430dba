"""plan, show, apply: the commands that compare the repo with the app and change the app."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..api.words import count
from ..errors import CesyncError, detail_lines
from ..escape import output
from . import (
    EXIT_CHANGES,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    cli_vars,
    dir_option,
    endpoint_option,
    env_option,
    err,
    format_option,
    handled,
    load_plan,
    main,
    out,
    print_plan,
    save,
    scrubber,
    target_option,
    var_options,
)

if TYPE_CHECKING:  # the commands import what they use
    from ..api.kinds import ResourceKind
    from ..client.api import CesClient
    from ..core.plan import Plan
    from ..pipeline.apply import ApplyResult, Outcome
    from ..pipeline.applying import Applied


label_option = click.option(
    "--label",
    "labels",
    multiple=True,
    help="A label reviewers gave the change (e.g. a pull request's): the policies read them (repeatable).",
)

destroy_option = click.option(
    "--destroy",
    is_flag=True,
    help="Tear down: plan against nothing desired, deleting every resource cesync owns in the app "
    "(with --prune-unmanaged, what it does not own too); the app itself stays.",
)


def _tear_down(ctx: Any, destroy: bool, prune: bool | None) -> bool | None:
    """--destroy makes the context a tear-down (pipeline.context.destroying); its deletes are prune's."""
    if not destroy:
        return prune
    if prune is False:
        raise CesyncError("--destroy deletes what prune deletes: it cannot go with --no-prune")
    from ..pipeline.context import destroying

    destroying(ctx)
    return True


fail_on_validation_option = click.option(
    "--fail-on-validation-errors",
    "fail_on_validation",
    is_flag=True,
    help="Exit 1 when CES reports problems in the app (App/Agent validationErrors, Example invalid).",
)


@main.command()
@dir_option
@env_option
@endpoint_option
@format_option
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Save the plan as JSON for 'cesync apply PLANFILE'.")
@click.option("--detailed-exitcode", is_flag=True, help="Exit 0 without changes, 2 with changes, 1 on error.")
@click.option(
    "--fail-on-unmanaged",
    is_flag=True,
    help="Exit 2 when the app has resources the repo does not define (made by hand); "
    "with --detailed-exitcode, also when anything is to change.",
)
@click.option(
    "--fail-on-drift",
    is_flag=True,
    help="Exit 2 when the app differs from what cesync last applied (changed outside cesync), "
    "not for the repo's own unapplied changes; alone or with --detailed-exitcode.",
)
@target_option
@click.option("--prune/--no-prune", default=None, help="Delete remote resources the repo does not define (default: cesync.yaml).")
@click.option(
    "--resend-input-only",
    is_flag=True,
    help="Send the input-only fields the repo sets (a deployment's WhatsApp or Instagram credentials) again: "
    "CES never returns them, so they are otherwise sent on create only.",
)
@fail_on_validation_option
@click.option("--prune-unmanaged", is_flag=True, help="With --prune: also delete what cesync does not own (made by hand).")
@destroy_option
@label_option
@var_options
@handled
def plan(
    directory: Path,
    env_name: str | None,
    endpoint: str | None,
    fmt: str,
    out: Path | None,
    detailed_exitcode: bool,
    fail_on_unmanaged: bool,
    fail_on_drift: bool,
    targets: tuple[str, ...],
    prune: bool | None,
    resend_input_only: bool,
    fail_on_validation: bool,
    prune_unmanaged: bool,
    destroy: bool,
    labels: tuple[str, ...],
    var_pairs: tuple[str, ...],
    var_files: tuple[Path, ...],
) -> None:
    """Show what apply would change in the app, with the etags seen.

    Exits 1 when a policy of the repo denies the plan (after showing and saving it)."""
    from ..pipeline.context import open_context
    from ..pipeline.planning import read_plan

    ctx = open_context(directory, env_name, endpoint, cli_vars(var_pairs, var_files), read_ahead=True, scrubber=scrubber())
    prune = _tear_down(ctx, destroy, prune)
    result = asyncio.run(
        read_plan(
            ctx,
            prune=prune,
            targets=targets,
            resend_input_only=resend_input_only,
            prune_unmanaged=prune_unmanaged,
            labels=labels,
        )
    )
    if out:
        save(out, result.to_json())
    print_plan(result, fmt)
    if out and fmt == "text":
        err(f"saved plan to {out}")
    if result.denied:
        err(f"policy: apply will refuse this plan: denied by {', '.join(sorted({f.rule for f in result.denied}))}")
        sys.exit(EXIT_ERROR)
    # another repo's resources (cesync.yaml owner) are nobody's hand-made drift
    by_hand = [n for n in result.unmanaged if n not in result.owners]
    if fail_on_unmanaged and by_hand:
        err(f"drift: {count(len(by_hand), 'resource')} in the app that the repo does not define (made by hand?)")
    if fail_on_validation and result.validation:
        err(f"CES reports problems in {count(len(result.validation), 'resource')} of the app (--fail-on-validation-errors)")
        sys.exit(EXIT_ERROR)
    # A flag named fail-on-X fails on X by itself: a drift check written as 'plan --fail-on-drift'
    # that exits 0 on drift would pass a job that should have failed.
    unmanaged = fail_on_unmanaged and bool(by_hand)
    if fail_on_drift:
        if result.drifted:
            err(f"drift: {count(len(result.drifted), 'resource')} changed outside cesync since its last apply")
        if result.drifted or unmanaged:
            sys.exit(EXIT_CHANGES)
        return
    if unmanaged or (detailed_exitcode and result.has_changes):
        sys.exit(EXIT_CHANGES)


@main.command()
@click.argument("planfile", type=click.Path(dir_okay=False, path_type=Path))
@format_option
@handled
def show(planfile: Path, fmt: str) -> None:
    """Render a saved plan (text, json or markdown)."""
    print_plan(load_plan(planfile), fmt)


@main.command()
@click.argument("planfile", required=False, type=click.Path(dir_okay=False, path_type=Path))
@dir_option
@env_option
@endpoint_option
@click.option("--auto-approve", is_flag=True, help="Do not ask for confirmation (required without a terminal).")
@click.option(
    "--parallelism", type=click.IntRange(1, 64), default=8, show_default=True, help="At most this many API calls at once."
)
@click.option("--prune/--no-prune", default=None, help="Delete remote resources the repo does not define.")
@click.option("--prune-unmanaged", is_flag=True, help="With --prune: also delete what cesync does not own (made by hand).")
@click.option(
    "--resend-input-only",
    is_flag=True,
    help="Send the input-only fields the repo sets (a deployment's WhatsApp or Instagram credentials) again: "
    "CES never returns them, so they are otherwise sent on create only.",
)
@click.option(
    "--force-delete",
    is_flag=True,
    help="Delete tools, toolsets, agents and guardrails even if still referenced (removes the references); "
    "other kinds' deletes have no force.",
)
@click.option("--allow-mass-change", is_flag=True, help="Apply even if the plan touches more than the safety threshold.")
@target_option
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="How to report the result."
)
@click.option(
    "--snapshot",
    is_flag=True,
    help="Before the first write, create an app version named after the git commit: 'cesync rollback' to it undoes the apply.",
)
@fail_on_validation_option
@destroy_option
@label_option
@var_options
@handled
def apply(
    planfile: Path | None,
    directory: Path,
    env_name: str | None,
    endpoint: str | None,
    auto_approve: bool,
    parallelism: int,
    prune: bool | None,
    resend_input_only: bool,
    prune_unmanaged: bool,
    force_delete: bool,
    allow_mass_change: bool,
    targets: tuple[str, ...],
    fmt: str,
    snapshot: bool,
    fail_on_validation: bool,
    destroy: bool,
    labels: tuple[str, ...],
    var_pairs: tuple[str, ...],
    var_files: tuple[Path, ...],
) -> None:
    """Make the app match the repo: creates, updates and (with --prune) deletes."""
    from ..pipeline.context import open_context
    from ..pipeline.saved import check_saved

    saved = load_plan(planfile) if planfile else None
    variables = cli_vars(var_pairs, var_files)
    source = directory
    if saved is not None and saved.commit:  # a promotion: the repo as at its commit, never the working tree
        from ..pipeline.promote import commit_tree
        from ..repo.repo import load_repo

        config_repo = load_repo(directory, resources=False)
        root, branch = config_repo.root, config_repo.config.promote.reviewedBranch
        source = click.get_current_context().with_resource(commit_tree(root, saved.commit, branch))
    # a saved plan is checked before any connection; without one, the app is read while the repo renders, as plan does
    ctx = open_context(
        source,
        env_name or (saved.environment if saved else None),
        endpoint,
        variables,
        read_ahead=saved is None,
        scrubber=scrubber(),
    )
    if saved is not None and saved.commit:
        ctx.state_root, ctx.promotion = root, (saved.promoted_from, saved.commit)
    if destroy and saved is not None and not saved.destroy:
        raise CesyncError("--destroy: the saved plan is not a tear-down; make one with 'cesync plan --destroy --out FILE'")
    prune = _tear_down(ctx, destroy or (saved is not None and saved.destroy), prune)
    # here, after rendering: the HTTP client the pipeline imports was loaded by the read ahead meanwhile
    from ..pipeline.applying import ApplyOptions, apply_env, check_saved_flags

    options = ApplyOptions(
        prune=prune,
        prune_unmanaged=prune_unmanaged,
        targets=targets,
        resend_input_only=resend_input_only,
        labels=labels,
        allow_mass_change=allow_mass_change,
        parallelism=parallelism,
        force_delete=force_delete,
        snapshot=snapshot,
    )
    if saved is not None:
        check_saved(ctx, saved)  # before any connection
        check_saved_flags(saved, options)

    hooks = _CommandHooks(fmt, auto_approve=auto_approve, show_plan=saved is None, locate=ctx.repo.locate)

    async def run() -> Applied:
        async with ctx.client(max_connections=max(parallelism * 2, 8)) as client:
            return await apply_env(ctx, client, saved, options, hooks)

    applied = asyncio.run(run())
    result = applied.result
    if not applied.changed:
        if fmt == "json":
            out(json.dumps(result.to_dict(), indent=2))
        return
    if fmt == "json":
        out(json.dumps(result.to_dict(), indent=2))
    else:
        said = {(o.action, o.kind, o.id) for o in result.outcomes if o.reported}
        for o in result.outcomes:
            if o.status in ("skipped", "not started") and (o.action, o.kind, o.id) not in said:  # each line once
                said.add((o.action, o.kind, o.id))
                out(f"  {o.status}: {o.action} {o.kind.label(o.id)}" + (f" ({o.message})" if o.message else ""))
        out(("Interrupted: " if result.interrupted else "Apply: ") + result.summary() + ".")
        if result.validation:
            from ..render.common import validation_lines

            out("CES reports problems in the app as applied (validationErrors, invalid):")
            for line in validation_lines(result.validation):
                out(f"  ! {line}")
    if fail_on_validation and result.validation and result.ok:
        err(f"CES reports problems in {count(len(result.validation), 'resource')} of the app (--fail-on-validation-errors)")
        sys.exit(EXIT_ERROR)
    if not result.ok:
        if not result.interrupted and fmt == "text":
            err("some actions did not succeed; run 'cesync plan' to see the remaining work")
        sys.exit(EXIT_INTERRUPTED if result.interrupted else EXIT_ERROR)


class _CommandHooks:
    """apply's hooks on the command line: the plan and the report printed (text), the question
    asked on a terminal, progress shown, and Ctrl-C stopping new writes (pipeline.applying)."""

    def __init__(
        self, fmt: str, *, auto_approve: bool, show_plan: bool, locate: Callable[[ResourceKind, str, str], str] | None
    ) -> None:
        self.fmt, self.auto_approve, self.show_plan, self.locate = fmt, auto_approve, show_plan, locate

    def planned(self, plan: Plan) -> None:
        if self.fmt == "text" and self.show_plan:
            print_plan(plan, "text")

    def confirm(self, plan: Plan) -> None:
        from ..render.common import summary

        if self.auto_approve:
            return
        if not sys.stdin.isatty():
            raise CesyncError("no terminal to confirm on: pass --auto-approve to apply without asking")
        if not click.confirm(f"Apply {summary(plan.counts())} to '{plan.environment}'?", default=False):
            raise CesyncError("apply cancelled; nothing was changed")

    def say(self, line: str) -> None:
        if self.fmt == "text":
            out(line)

    def warn(self, line: str) -> None:
        err(line)

    async def write(self, client: CesClient, plan: Plan, parallelism: int, force_delete: bool) -> ApplyResult:
        return await _run_apply(client, plan, parallelism, force_delete, self.fmt, self.locate)


async def _run_apply(
    client: CesClient,
    plan_: Plan,
    parallelism: int,
    force_delete: bool,
    fmt: str,
    locate: Callable[[ResourceKind, str, str], str] | None = None,
) -> ApplyResult:
    from ..pipeline.apply import apply_plan

    interrupt = asyncio.Event()
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, interrupt.set)
    progress = _Progress(len(plan_.changes), enabled=fmt == "text", locate=locate)
    try:
        return await apply_plan(
            client, plan_, parallelism=parallelism, force_delete=force_delete, on_event=progress.event, interrupt=interrupt
        )
    finally:
        progress.close()
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class _Progress:
    """A progress bar on a terminal; one plain line per action elsewhere (CI logs), each with the count,
    the rate and the time left: under a quota (about 10 writes a second) a big apply takes minutes."""

    def __init__(
        self,
        total: int,
        enabled: bool,
        clock: Callable[[], float] = time.monotonic,
        locate: Callable[[ResourceKind, str, str], str] | None = None,
    ) -> None:
        self.enabled = enabled
        self.locate = locate  # (kind, id, BadRequest field) -> file:line:col in the repo
        self.total = total
        self.count = 0
        self.clock = clock
        self.started = clock()
        self.bar: Any = None
        if enabled and sys.stdout.isatty():
            from rich.progress import Progress

            self.bar = Progress(transient=True)
            self.task = self.bar.add_task("applying", total=total)
            self.bar.start()

    def pace(self) -> str:
        """``[done/total, rate/s, ETA]`` from what finished so far."""
        elapsed = self.clock() - self.started
        rate = self.count / elapsed if elapsed > 0 else 0.0
        left = self.total - self.count
        eta = f"ETA {_duration(left / rate)}" if rate > 0 and left else ("done" if not left else "ETA ?")
        return f"[{self.count}/{self.total}, {rate:.1f}/s, {eta}]"

    def event(self, o: Outcome) -> None:
        if not self.enabled:
            return
        o.reported = True
        self.count += 1
        line = scrubber().scrub(f"{o.status}: {o.action} {o.kind.label(o.id)}" + (f" ({o.message})" if o.message else ""))
        locate = self.locate
        where = (lambda f: locate(o.kind, o.id, f)) if locate is not None else None
        details = [scrubber().scrub("    " + d) for d in detail_lines(o.details, where)]
        # rich prints escape sequences as given (it drops only a few C0 codes), and wraps a long line
        # into new lines, one of which may then start with '::' (a pseudo-terminal in CI): neither
        if self.bar is not None:
            self.bar.console.print(output(line), markup=False, highlight=False, soft_wrap=True)
            for d in details:
                self.bar.console.print(output(d), markup=False, highlight=False, soft_wrap=True)
            self.bar.update(self.task, advance=1, description=f"applying {self.pace()}")
        else:
            out(f"{line}  {self.pace()}")
            for d in details:
                out(d)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
