"""destroy: the tear-down of a retired environment, through apply's own path (apply --destroy)."""

from __future__ import annotations

from pathlib import Path

import click

from . import dir_option, endpoint_option, env_option, handled, main, var_options
from .core import apply


@main.command()
@dir_option
@env_option
@endpoint_option
@click.option("--auto-approve", is_flag=True, help="Do not ask for confirmation (required without a terminal).")
@click.option("--prune-unmanaged", is_flag=True, help="Also delete what cesync does not own (made by hand in the console).")
@click.option("--allow-mass-change", is_flag=True, help="Delete even if that is more than the safety threshold (it usually is).")
@click.option(
    "--snapshot",
    is_flag=True,
    help="Before the first delete, create an app version: 'cesync rollback' to it brings everything back.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="How to report the result."
)
@var_options
@handled
def destroy(
    directory: Path,
    env_name: str | None,
    endpoint: str | None,
    auto_approve: bool,
    prune_unmanaged: bool,
    allow_mass_change: bool,
    snapshot: bool,
    fmt: str,
    var_pairs: tuple[str, ...],
    var_files: tuple[Path, ...],
) -> None:
    """Delete every resource cesync owns in the environment's app (a retired environment): apply --destroy.

    The same plan, confirmation, mass-change guard, policies and record as apply; 'cesync plan
    --destroy --out FILE' then 'cesync apply FILE' for a reviewed tear-down. The app itself stays;
    references to what goes (the app's root agent, its guardrails) go with it (CES's force).
    """
    click.get_current_context().invoke(
        apply,
        planfile=None,
        directory=directory,
        env_name=env_name,
        endpoint=endpoint,
        auto_approve=auto_approve,
        parallelism=8,
        prune=None,
        resend_input_only=False,
        prune_unmanaged=prune_unmanaged,
        force_delete=True,
        allow_mass_change=allow_mass_change,
        targets=(),
        fmt=fmt,
        snapshot=snapshot,
        fail_on_validation=False,
        destroy=True,
        labels=(),
        var_pairs=var_pairs,
        var_files=var_files,
    )
