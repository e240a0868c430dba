"""versions, rollback: the app's versions (snapshots) and restoring one."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from pathlib import Path

import click

from ..errors import ApiError, CesyncError
from . import dir_option, endpoint_option, env_option, err, format_option, handled, main, out, print_plan, scrubber


@main.command()
@dir_option
@env_option
@endpoint_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="How to list them.")
@handled
def versions(directory: Path, env_name: str | None, endpoint: str | None, fmt: str) -> None:
    """List the app's versions, newest first (make one with 'apply --snapshot')."""
    from ..client import connect
    from ..client.apps import list_versions
    from ..repo.repo import load_repo

    repo = load_repo(directory, resources=False)
    from ..pipeline.masking import remember_sensitive

    remember_sensitive(scrubber(), repo)  # before the command's first output
    env = repo.env(env_name)

    async def run() -> list[dict[str, object]]:
        async with connect(env, repo.root, override=endpoint, scrubber=scrubber()) as client:
            return await list_versions(client, env.parent)

    found = asyncio.run(run())
    if fmt == "json":
        out(json.dumps([{k: v for k, v in x.items() if k != "snapshot"} for x in found], indent=2))
        return
    if not found:
        out(f"no versions of {env.parent} (make one with 'cesync apply --snapshot')")
        return
    for v in found:
        rid = str(v.get("name", "")).rsplit("/", 1)[-1]
        out(f"{rid}  {v.get('createTime', '-')}  {v.get('displayName', '')}".rstrip())


@main.command()
@click.argument("version")
@dir_option
@env_option
@endpoint_option
@click.option(
    "--auto-approve", "yes", is_flag=True, help="Restore without asking for confirmation (required without a terminal)."
)
@click.option(
    "--yes", "deprecated_yes", is_flag=True, hidden=True, help="Deprecated spelling of --auto-approve."
)  # kept for scripts
@format_option
@handled
def rollback(
    directory: Path, env_name: str | None, endpoint: str | None, version: str, yes: bool, deprecated_yes: bool, fmt: str
) -> None:
    """Show what restoring VERSION (an id from 'cesync versions') would change, then restore it (RestoreAppVersion)."""
    from ..client import connect
    from ..client.apps import list_versions, restore_version
    from ..client.connect import endpoint_for
    from ..pipeline.versions import record_rollback, restore_plan
    from ..repo.repo import load_repo

    if deprecated_yes:
        err("warning: --yes is deprecated; use --auto-approve (as for apply)")
        yes = True
    repo = load_repo(directory)  # its files say which fields hold sensitive values, in the snapshot too
    from ..pipeline.masking import remember_sensitive

    remember_sensitive(scrubber(), repo)  # before the command's first output
    env = repo.env(env_name)

    async def run() -> tuple[list[str], str]:
        async with connect(env, repo.root, override=endpoint, scrubber=scrubber()) as client:
            name, preview = await restore_plan(client, env, version, repo)
            # its header names where the app was read, as every plan's does (docs/environments.md)
            print_plan(dataclasses.replace(preview, endpoint=endpoint_for(env, endpoint)), fmt)
            if not yes:
                if not sys.stdin.isatty():
                    raise CesyncError("no terminal to confirm on: pass --auto-approve to restore without asking")
                if not click.confirm(f"Restore {version} to '{env.name}'?", default=False):
                    raise CesyncError("rollback cancelled; nothing was changed")
            before = {v.get("name") for v in await list_versions(client, env.parent)}
            await restore_version(client, name)
            # RestoreAppVersion first "will create a new app version from the current draft app"
            # (google-cloud-ces); its answer does not name it, the list does
            after = await list_versions(client, env.parent)
            backups = [str(v["name"]).rsplit("/", 1)[-1] for v in after if v.get("name") not in before]
            try:
                made = await record_rollback(client, env, repo, name, after)
            except ApiError as exc:  # the restore is done: say so, and what is missing
                err(f"warning: restored, but the applied record could not be written ({exc}); the next apply writes one")
                made = None
            return backups, made.version.rsplit("/", 1)[-1] if made is not None else ""

    backups, record = asyncio.run(run())
    said = fmt == "json"  # a JSON preview on stdout stays one JSON document: the rest is said on stderr
    out(f"Restored {version} to {env.parent}. The repo may say otherwise: 'cesync plan' shows the difference.", err=said)
    if backups:
        out(f"The app as it was is kept as version {backups[0]} ('cesync rollback {backups[0]}' goes back to it).", err=said)
    if record:
        out(f"Applied record: version {record} (what cesync made and the restore brought back is cesync's again).", err=said)
