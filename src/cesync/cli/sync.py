"""Bringing the app back into the repo, and the repo's layout: pull, fmt, convert-tools."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..api.words import count
from ..errors import CesyncError, ConfigError
from . import cli_vars, dir_option, endpoint_option, env_option, err, handled, main, out, scrubber, target_option, var_options

if TYPE_CHECKING:
    from ..api.resource import Resource


@main.command()
@dir_option
@env_option
@endpoint_option
@target_option
@click.option("--prune", is_flag=True, help="Delete the files of resources that are gone from the app.")
@click.option("--dry-run", is_flag=True, help="Print the unified diff of the files pull would change; write nothing.")
@click.option("--inline", is_flag=True, help="Write a remote value as a literal where the file renders it from a ${VAR}.")
@var_options
@handled
def pull(
    directory: Path,
    env_name: str | None,
    endpoint: str | None,
    targets: tuple[str, ...],
    prune: bool,
    dry_run: bool,
    inline: bool,
    var_pairs: tuple[str, ...],
    var_files: tuple[Path, ...],
) -> None:
    """Write the app's state of managed resources back into the files that define them.

    Minimal edits: comments, key order, quoting and includes stay; only changed values
    move. A resource whose remote value differs from a ${VAR} rendering (unless --inline)
    is left as it is and reported, the others are pulled, and the exit is 1. Exit 1, writing
    nothing, when the result would not plan empty.
    """
    from ..core.ignore import leave_to_console
    from ..core.targets import resolve_targets, target_keys
    from ..pipeline.context import open_context
    from ..pipeline.pull import pull_changes, unified_diffs, verify
    from ..repo.files import write_files
    from ..sync.remote import read_existing

    ctx = open_context(directory, env_name, endpoint, cli_vars(var_pairs, var_files), scrubber=scrubber())

    left_out: list[str] = []

    async def run() -> tuple[list[Resource], Mapping[str, str]]:
        from ..sync.record import read_records

        async with ctx.client() as client:
            remote = await read_existing(client, ctx.env.parent, left_out)
            # what the other owners own is in the heads: no record's snapshot (the app again) is read
            return remote, (await read_records(client, ctx.env, ctx.repo.config.owner or "", whole=False)).others

    remote, others = asyncio.run(run())
    for note in left_out:  # the tools CES makes: never files of the repo
        err(f"note: {note}")
    theirs = sorted(f"{r.kind}/{r.id}" for r in remote if f"{r.kind.name}/{r.id}" in others)
    if theirs:  # another repo's (cesync.yaml owner): never written into this one
        err(f"note: left out {len(theirs)} resource(s) another repo owns: {', '.join(theirs[:20])}")
        remote = [r for r in remote if f"{r.kind.name}/{r.id}" not in others]
    selected = resolve_targets(targets, {d.key for d in ctx.desired} | {r.key for r in remote})
    # fields left to the console (ignoreChanges) take the app's value first: pull never writes them back
    desired, _ = leave_to_console(ctx.desired, remote, ctx.ignore, ctx.env.parent)
    result = pull_changes(
        ctx.repo,
        ctx.env,
        desired,
        remote,
        wanted=selected,
        prune=prune,
        inline=inline,
        secrets=ctx.secrets,
        scrubber=ctx.scrubber,
    )
    # A resource with a conflict stays as it is (and is not expected to plan empty); the rest is pulled.
    wanted = target_keys(selected)
    if result.conflicted:
        wanted = (wanted or {f"{d.kind}/{d.id}" for d in ctx.desired} | {f"{r.kind}/{r.id}" for r in remote}) - set(
            result.conflicted
        )
    left = verify(ctx.repo.root, result.files, ctx.env, remote, wanted, ctx.scrubber)
    if left:
        raise CesyncError(
            "pull cannot reproduce the app exactly; nothing was written. Still different after the edit: " + "; ".join(left)
        )
    for note in result.notes:
        err(f"note: {note}")
    for gone in result.gone:
        err(f"{'deleting' if prune else 'gone from the app (pass --prune to delete its file)'}: {gone}")
    if dry_run:
        out(unified_diffs(ctx.repo.root, result.files), nl=False)
    else:
        write_files(ctx.repo.root, result.files)
    verb = "would change" if dry_run else "changed"
    kept = f", {len(result.conflicted)} left as they are (conflicts below)" if result.conflicted else ""
    out(
        f"pull: {len(result.updated)} updated, {len(result.created)} new, {len(result.gone)} gone{kept}; "
        f"{verb} {_files(len(result.files))}",
        err=dry_run,
    )
    if result.conflicts:
        raise ConfigError(result.conflicts)  # after the rest is pulled: each conflict, then exit 1


def _files(n: int) -> str:
    return f"{n} file{'' if n == 1 else 's'}"


@main.command()
@dir_option
@click.option("--check", is_flag=True, help="Write nothing; exit 1 listing the files that are not in the canonical layout.")
@handled
def fmt(directory: Path, check: bool) -> None:
    """Rewrite cesync.yaml and every resource file in one canonical layout, keeping comments.

    Keys in the order the API declares the fields, 2-space indentation; values, quoting
    and comments stay. For CI and pre-commit: fmt --check.
    """
    from ..repo.files import write_files
    from ..repo.fmt import format_repo

    root = directory.resolve()
    changed, problems = format_repo(root)
    if problems:
        raise ConfigError(problems)
    if check:
        if changed:
            for rel in sorted(changed):
                out(f"would reformat {rel}")
            raise CesyncError(f"{count(len(changed), 'file')} not in the canonical layout; run 'cesync fmt'")
        out("ok: every file is in the canonical layout")
        return
    write_files(root, changed)
    for rel in sorted(changed):
        out(f"reformatted {rel}")
    out(f"{count(len(changed), 'file')} reformatted")


@main.command("convert-tools")
@dir_option
@click.option("--dry-run", is_flag=True, help="List what would be rewritten; write nothing.")
@handled
def convert_tools(directory: Path, dry_run: bool) -> None:
    """Rewrite OpenAPI, connector and MCP tool files as the toolset files CES makes those tools from.

    tools/<id>.yaml becomes toolsets/<id>.yaml (same id, comments, includes and ${VAR} kept);
    agents' {ref: tools/<id>} move to their toolsets list. Other references to the tool, and
    system or remote agent tool files, are listed as file:line:col to edit by hand (exit 1).
    """
    from ..repo.convert import convert_repo
    from ..repo.files import write_files

    root = directory.resolve()
    result = convert_repo(root)
    if not dry_run:
        write_files(root, result.files)
    for line in result.done:
        out(f"{'would convert' if dry_run else 'converted'} {line}")
    out(f"{count(len([d for d in result.done if ' -> toolsets/' in d]), 'tool file')} {'to convert' if dry_run else 'converted'}")
    if result.by_hand:
        raise ConfigError(result.by_hand)
