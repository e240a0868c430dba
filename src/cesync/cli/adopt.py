"""Adoption and promotion: export, import-archive, diff."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import sys
import tempfile
from pathlib import Path

import click

from ..api.kinds import KINDS, ResourceKind
from ..api.resource import Resource
from ..api.words import count, spoken
from ..client import connect
from ..client.connect import embedded_state, endpoint_for
from ..core.plan import Plan
from ..errors import CesyncError
from ..pipeline.exporting import config_for, export_app, plan_files, plan_folder, policy_files, target_for_app
from ..repo.config import EMBEDDED, ENV_NAME
from ..repo.files import write_tree
from ..repo.repo import CONFIG_FILE, load_repo
from ..sync.archive import extract_zip, find_app_root, read_archive, retarget
from ..sync.export import ExportedRepo, export_repo
from ..sync.remote import read_remote
from . import (
    EXIT_CHANGES,
    cli_vars,
    complete_env,
    dir_option,
    endpoint_option,
    env_option,
    err,
    format_option,
    handled,
    main,
    print_plan,
    scrubber,
    target_option,
    var_options,
)
from . import out as say  # `out` is export's --out folder

# --- adoption and promotion -------------------------------------------------------------------

out_dir_option = click.option(
    "--out", required=True, type=click.Path(file_okay=False, path_type=Path), help="The folder to write the repo to."
)
force_option = click.option("--force", is_flag=True, help="Write into a non-empty folder, replacing the files cesync writes.")


def _env_name(name: str) -> str:
    if not ENV_NAME.match(name):
        raise CesyncError(f"environment name {name!r}: use lowercase letters, digits and '-'")
    return name


@main.command()
@dir_option
@env_option
@endpoint_option
@out_dir_option
@click.option(
    "--app",
    "app_name",
    help="Adopt this app (projects/P/locations/L/apps/A) without a cesync.yaml; --env names its environment.",
)
@force_option
@target_option
@var_options
@handled
def export(
    directory: Path,
    env_name: str | None,
    endpoint: str | None,
    out: Path,
    app_name: str | None,
    force: bool,
    targets: tuple[str, ...],
    var_pairs: tuple[str, ...],
    var_files: tuple[Path, ...],
) -> None:
    """Write the whole app (settings, agents, guardrails, tools and the rest) as a cesync repo (adoption)."""
    secrets: dict[str, str] = {}
    carried: dict[str, str] = {}
    if app_name:
        name = _env_name(env_name or "default")
        env, root = target_for_app(name, app_name, endpoint, cli_vars(var_pairs, var_files)), out
        config_text = config_for(env)
    else:
        repo = load_repo(directory, resources=False)
        repo.overrides = cli_vars(var_pairs, var_files)
        from ..pipeline.masking import remember_sensitive

        remember_sensitive(scrubber(), repo)  # before the command's first output
        env, root = repo.env(env_name), repo.root
        config_text = (repo.root / CONFIG_FILE).read_text(encoding="utf-8")
        # A sensitive value the app holds is written back as its ${NAME}, never as a literal.
        secrets = repo.sensitive_values(env)
        carried = policy_files(repo)  # its cesync.yaml goes along, and with it the policies it names

    async def run() -> tuple[ExportedRepo, list[Resource]]:
        async with connect(env, root, override=endpoint, scrubber=scrubber()) as client:
            return await export_app(client, env, config_text, targets, sensitive=secrets, scrubber=scrubber())

    exported, remote = asyncio.run(run())
    exported.files.update(carried)
    if (out / ".gitignore").exists():
        exported.files.pop(".gitignore", None)
    state = embedded_state(root, env.name)
    if not app_name and endpoint_for(env, endpoint) == EMBEDDED and state.is_file():
        # The embedded emulator's app lives in the repo folder: take it along, so the
        # exported repo plans against the same app.
        from ..emulator.store import Store  # the state is a database; the copy is its JSON form

        exported.files[f".cesync/{env.name}.json"] = json.dumps(Store(state).snapshot())  # JSON: its first use makes the database

    def round_trip(staged: Path) -> None:  # export must round-trip; say so loudly where it does not
        for change in plan_folder(staged, env.name, remote, variables=dict(env.overrides), scrubber=scrubber()).changes:
            fields = ", ".join(f.path for f in change.fields) or change.action
            err(f"warning: {change.kind} {change.id} does not round-trip exactly ({fields}); check it by hand")

    write_tree(out, exported.files, force=force, verify=round_trip)
    for note in exported.notes:
        err(f"note: {note}")
    say(f"exported {_counts([r.kind for r in remote])} of {env.parent} to {out}")
    say(f"next: cesync plan --dir {out} --env {env.name}   (shows no changes)")


@main.command("import-archive")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@out_dir_option
@click.option("--env", "env_name", default="local", show_default=True, help="The environment environment.json becomes.")
@click.option(
    "--app",
    "app_name",
    help="The app it is for (projects/P/locations/L/apps/A); default: the embedded emulator, app named after the export.",
)
@force_option
@handled
def import_archive(source: Path, out: Path, env_name: str, app_name: str | None, force: bool) -> None:
    """Convert a CES app export (zip or folder) into a cesync repo."""
    _env_name(env_name)
    with tempfile.TemporaryDirectory(prefix="cesync-archive-") as tmp:
        top = source
        if source.is_file():
            top = Path(tmp)
            extract_zip(source, top)
        contents = read_archive(find_app_root(top))
    endpoint = None
    if app_name is None:
        slug = re.sub(r"[^a-z0-9-]+", "-", (contents.app_name or "imported").lower()).strip("-") or "imported"
        app_name, endpoint = f"projects/local/locations/us/apps/{slug}", EMBEDDED
    env = target_for_app(env_name, app_name, endpoint, contents.variables)
    config_text = config_for(env)
    resources = retarget(contents, env.parent)
    exported = export_repo(resources, parent=env.parent, variables=env.vars, urls={}, config_text=config_text)
    checked: list[Plan] = []
    # The result must load and validate before it is moved into place.
    write_tree(
        out,
        exported.files,
        force=force,
        verify=lambda staged: checked.append(plan_folder(staged, env.name, [], scrubber=scrubber())),
    )
    for note in contents.notes + exported.notes:
        err(f"note: {note}")
    say(
        f"imported {_counts([r.kind for r in contents.resources])} "
        f"({count(len(contents.variables), 'environment value')} as vars) to {out}"
    )
    defined = count(checked[0].counts()["create"], "resource")  # planned against an empty app: what the repo defines
    say(f"next: cesync plan --dir {out} --env {env.name}   (the repo defines {defined}; plan compares them with the app)")


@main.command("diff")
@dir_option
@click.option(
    "--from",
    "from_env",
    required=True,
    help="The environment whose live app is the model (e.g. dev).",
    shell_complete=complete_env,
)
@click.option(
    "--to",
    "to_env",
    required=True,
    help="The environment whose live app is compared with it (e.g. prod).",
    shell_complete=complete_env,
)
@endpoint_option
@format_option
@click.option("--detailed-exitcode", is_flag=True, help="Exit 0 when equal, 2 when they differ, 1 on error.")
@var_options
@handled
def diff_cmd(
    directory: Path,
    from_env: str,
    to_env: str,
    endpoint: str | None,
    fmt: str,
    detailed_exitcode: bool,
    var_pairs: tuple[str, ...],
    var_files: tuple[Path, ...],
) -> None:
    """Compare two live apps: what making TO like FROM's app as it runs now would change.

    Reads both apps, turns FROM back into repo form with its own variables, renders
    that for TO, and plans it against TO (with prune: resources only in TO show as
    deletes). This is not a promotion: 'cesync promote' plans TO from the commit FROM
    last applied, and that plan is what apply applies.
    """
    repo = load_repo(directory)  # its files say which fields hold sensitive values
    repo.overrides = cli_vars(var_pairs, var_files)
    from ..pipeline.masking import remember_sensitive

    remember_sensitive(scrubber(), repo)  # before the command's first output
    a, b = repo.env(from_env), repo.env(to_env)
    config_text = (repo.root / CONFIG_FILE).read_text(encoding="utf-8")
    secrets = repo.sensitive_values(a)  # FROM's go back to their ${NAME} and render as TO's: neither is printed

    async def run() -> tuple[ExportedRepo, list[Resource]]:
        async with (
            connect(a, repo.root, override=endpoint, scrubber=scrubber()) as ca,
            connect(b, repo.root, override=endpoint, scrubber=scrubber()) as cb,
        ):
            exporting = export_app(ca, a, config_text, sensitive=secrets, scrubber=scrubber())
            (exported, _), remote_b = await asyncio.gather(exporting, read_remote(cb, b.parent))
            return exported, remote_b

    exported, remote_b = asyncio.run(run())
    result = plan_files(
        exported.files, b.name, remote_b, prune=True, variables=repo.overrides, hidden_by=repo, scrubber=scrubber()
    )
    result = dataclasses.replace(result, endpoint=endpoint_for(b, endpoint))  # TO's header names where it was read, as plan's
    not_promotion = (
        f"This compares the live apps; it is not a promotion: 'cesync promote --from {a.name} --to {b.name}' "
        f"plans '{b.name}' from the commit '{a.name}' last applied."
    )
    if fmt == "text":
        say(f"Making '{b.name}' like the live '{a.name}' ({a.parent}) would change:")
        err(not_promotion)
    elif fmt == "markdown":
        say(f"#### Live `{a.name}` → `{b.name}` (a comparison, not a promotion)\n")
    print_plan(result, fmt)
    if detailed_exitcode and result.has_changes:
        sys.exit(EXIT_CHANGES)


def _counts(kinds: list[ResourceKind]) -> str:
    """``3 tools and 1 toolset``; ``the app's settings, 3 tools, 2 agents and 1 evaluation expectation``: what there
    is, in registry order, each kind as a sentence says it (ResourceKind.singular, plural)."""
    parts = [k.counted(kinds.count(k)) for k in KINDS.values() if k in kinds and not k.singleton]
    app = ["the app's settings"] if any(k.singleton for k in kinds) else []
    return spoken([*app, *parts]) if app or parts else "no resources"
