"""The command line: wiring, output and exit codes only.

Every command turns a CesyncError into one clear message on stderr and exit 1;
a user never sees a traceback (set CESYNC_DEBUG=1 to get one).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import json
import os
import re
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from . import __version__
from .apply import ApplyResult, Outcome, apply_plan
from .archive import extract_zip, find_app_root, read_archive
from .client import connect
from .client.api import CesClient
from .client.connect import endpoint_for
from .comments import find_target, run_link, upsert_comment
from .config import EMBEDDED
from .diff import Remote
from .errors import CesyncError, ConfigError, PlanFileError, Problem
from .export import ExportedRepo, export_repo
from .files import write_tree
from .jsonschema import render_schemas
from .plan import Plan, check_safety
from .remote import read_remote
from .render import FORMATS, MARKER, render, render_markdown, use_color
from .render.common import summary
from .render.markdown import GITHUB_COMMENT_LIMIT
from .repo import CONFIG_FILE, load_repo
from .scaffold import write_scaffold
from .toolcall import canonical_output, request_for
from .tooltests import Case, junit_xml, load_tests, report, run_cases
from .tooltests import Result as TestResult
from .workflow import (
    Context,
    config_for_app,
    export_app,
    find_apps,
    make_plan,
    open_context,
    plan_files,
    target_for_app,
    tool_names,
)
from .yamlfile import load_text, read_text

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK, EXIT_ERROR, EXIT_CHANGES, EXIT_INTERRUPTED = 0, 1, 2, 130


def err(message: str) -> None:
    click.echo(message, err=True)


def handled(fn: F) -> F:
    """Run a command body; map cesync errors and interrupts to messages and exit codes."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ConfigError as exc:
            for problem in exc.problems:
                err(str(problem))
            err(f"{len(exc.problems)} problem{'s' if len(exc.problems) != 1 else ''} found")
            sys.exit(EXIT_ERROR)
        except CesyncError as exc:
            err(f"error: {exc}")
            sys.exit(EXIT_ERROR)
        except KeyboardInterrupt:
            err("interrupted")
            sys.exit(EXIT_INTERRUPTED)
        except click.exceptions.Exit:
            raise
        except click.ClickException:
            raise
        except Exception as exc:  # a bug: still no traceback unless asked for
            if os.environ.get("CESYNC_DEBUG"):
                traceback.print_exc()
            err(f"internal error: {type(exc).__name__}: {exc} (set CESYNC_DEBUG=1 for a traceback, and please report it)")
            sys.exit(EXIT_ERROR)

    return wrapper  # type: ignore[return-value]


dir_option = click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="The cesync repo.",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cesync")
def main() -> None:
    """Manage Google Cloud CES agent tools as code: validate, plan, apply."""


@main.command()
@dir_option
@click.option("--env", "envs", multiple=True, help="Validate for these environments only (default: all).")
@click.option("--recursive", is_flag=True, help="Validate every folder with a cesync.yaml below --dir (one per app).")
@handled
def validate(directory: Path, envs: tuple[str, ...], recursive: bool) -> None:
    """Check every file offline; report each problem as file:line:col."""
    folders = sorted({directory / e["dir"] for e in find_apps(directory)}) if recursive else [directory]
    if not folders:
        raise CesyncError(f"no cesync.yaml under {directory}")
    problems: list[Problem] = []
    for folder in folders:
        prefix = folder.relative_to(directory) if recursive else None
        try:
            problems += _prefixed(_validate_one(folder, envs, prefix), prefix)
        except ConfigError as exc:
            problems += _prefixed(exc.problems, prefix)
    if problems:
        raise ConfigError(problems)


def _prefixed(problems: list[Problem], prefix: Path | None) -> list[Problem]:
    """Problems of one app folder, named from the folder validate --recursive started in."""
    if prefix is None or str(prefix) == ".":
        return problems
    return [dataclasses.replace(p, file=str(prefix / p.file)) for p in problems]


def _validate_one(directory: Path, envs: tuple[str, ...], prefix: Path | None) -> list[Problem]:
    repo = load_repo(directory)
    names = list(envs) or repo.env_names
    for name in names:
        repo.env(name)  # unknown names fail here with the list of known ones
    problems = repo.validate(names)
    if not problems:
        count = len(repo.files)
        where = f" in {prefix}" if prefix is not None else ""
        click.echo(f"ok: {count} file{'s' if count != 1 else ''}{where} valid for {', '.join(names)}")
    return problems


@main.command()
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("schemas"), show_default=True)
@click.option("--check", is_flag=True, help="Exit 1 if the files in --out are not current.")
@handled
def schema(out: Path, check: bool) -> None:
    """Write JSON Schemas for tool files, toolset files and cesync.yaml."""
    stale = []
    for name, text in render_schemas().items():
        path = out / name
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current == text:
            continue
        stale.append(str(path))
        if not check:
            out.mkdir(parents=True, exist_ok=True)
            _atomic_write(path, text)
    if check and stale:
        raise CesyncError(f"stale JSON Schemas: {', '.join(stale)}; run 'cesync schema --out {out}'")
    click.echo(f"{'stale' if check and stale else 'ok'}: {len(stale)} schema file(s) {'written' if not check else 'out of date'}")


@main.command()
@dir_option
@click.option("--app", default="my-app", show_default=True, help="The CES app id of the local environment.")
@handled
def init(directory: Path, app: str) -> None:
    """Scaffold a new repo: cesync.yaml, an example tool, .gitignore."""
    for path in write_scaffold(directory, app):
        click.echo(f"created {path}")
    click.echo("next: cesync validate && cesync plan --env local")


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


# --- plan, show, apply ------------------------------------------------------------------------

env_option = click.option("--env", "env_name", help="The environment of cesync.yaml (or CESYNC_ENV).")
endpoint_option = click.option(
    "--endpoint", help="Override the environment's endpoint: 'embedded' or an emulator URL (CES_EMULATOR_HOST works too)."
)
format_option = click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)


def _print_plan(plan: Plan, fmt: str) -> None:
    click.echo(render(plan, fmt, color=use_color(sys.stdout.isatty())), nl=False)


def _save(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(path, text)


@main.command()
@dir_option
@env_option
@endpoint_option
@format_option
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Save the plan as JSON for 'cesync apply PLANFILE'.")
@click.option("--detailed-exitcode", is_flag=True, help="Exit 0 without changes, 2 with changes, 1 on error.")
@click.option("--target", "targets", multiple=True, help="Limit the plan to these ids (tool id or kind/id).")
@click.option("--prune/--no-prune", default=None, help="Delete remote resources the repo does not define (default: cesync.yaml).")
@handled
def plan(
    directory: Path,
    env_name: str | None,
    endpoint: str | None,
    fmt: str,
    out: Path | None,
    detailed_exitcode: bool,
    targets: tuple[str, ...],
    prune: bool | None,
) -> None:
    """Show what apply would change in the app, with the etags seen."""
    ctx = open_context(directory, env_name, endpoint)

    async def run() -> Plan:
        async with ctx.client() as client:
            return await make_plan(ctx, client, prune=prune, targets=set(targets) or None)

    result = asyncio.run(run())
    if out:
        _save(out, result.to_json())
    _print_plan(result, fmt)
    if out and fmt == "text":
        err(f"saved plan to {out}")
    if detailed_exitcode and result.has_changes:
        sys.exit(EXIT_CHANGES)


@main.command()
@click.argument("planfile", type=click.Path(dir_okay=False, path_type=Path))
@format_option
@handled
def show(planfile: Path, fmt: str) -> None:
    """Render a saved plan (text, json or markdown)."""
    _print_plan(_load_plan(planfile), fmt)


def _load_plan(path: Path) -> Plan:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanFileError(f"cannot read plan file {path}: {exc}") from None
    return Plan.from_json(text, str(path))


@main.command()
@click.argument("planfile", required=False, type=click.Path(dir_okay=False, path_type=Path))
@dir_option
@env_option
@endpoint_option
@click.option("--auto-approve", is_flag=True, help="Do not ask for confirmation (required without a terminal).")
@click.option("--parallelism", type=click.IntRange(1, 64), default=8, show_default=True)
@click.option("--prune/--no-prune", default=None, help="Delete remote resources the repo does not define.")
@click.option("--force-delete", is_flag=True, help="Delete tools even if agents still reference them (removes the references).")
@click.option("--allow-mass-change", is_flag=True, help="Apply even if the plan touches more than the safety threshold.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@handled
def apply(
    planfile: Path | None,
    directory: Path,
    env_name: str | None,
    endpoint: str | None,
    auto_approve: bool,
    parallelism: int,
    prune: bool | None,
    force_delete: bool,
    allow_mass_change: bool,
    fmt: str,
) -> None:
    """Make the app match the repo: creates, updates and (with --prune) deletes."""
    saved = _load_plan(planfile) if planfile else None
    ctx = open_context(directory, env_name or (saved.environment if saved else None), endpoint)
    if saved is not None:
        _check_saved(saved, ctx)
    safety = ctx.repo.config.safety

    async def run() -> ApplyResult | None:
        async with ctx.client(max_connections=max(parallelism * 2, 8)) as client:
            current = saved or await make_plan(ctx, client, prune=prune)
            if fmt == "text" and saved is None:
                _print_plan(current, "text")
            if not current.has_changes:
                if fmt == "json":
                    click.echo(json.dumps(ApplyResult(current.environment, current.app).to_dict(), indent=2))
                return None
            check_safety(current, safety.maxChangeFraction, safety.minResources, allow_mass_change)
            if not auto_approve:
                if not sys.stdin.isatty():
                    raise CesyncError("no terminal to confirm on: pass --auto-approve to apply without asking")
                if not click.confirm(f"Apply {summary(current.counts())} to '{current.environment}'?", default=False):
                    raise CesyncError("apply cancelled; nothing was changed")
            return await _run_apply(client, current, parallelism, force_delete, fmt)

    result = asyncio.run(run())
    if result is None:
        return
    if fmt == "json":
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        for o in result.outcomes:
            if o.status in ("skipped", "not started"):
                click.echo(f"  {o.status}: {o.action} {o.kind} {o.id}" + (f" ({o.message})" if o.message else ""))
        click.echo(("Interrupted: " if result.interrupted else "Apply: ") + result.summary() + ".")
    if not result.ok:
        if not result.interrupted and fmt == "text":
            err("some actions did not succeed; run 'cesync plan' to see the remaining work")
        sys.exit(EXIT_INTERRUPTED if result.interrupted else EXIT_ERROR)


def _check_saved(saved: Plan, ctx: Context) -> None:
    if saved.environment != ctx.env.name or saved.app != ctx.env.parent:
        raise PlanFileError(f"the plan is for {saved.environment} ({saved.app}), not {ctx.env.name} ({ctx.env.parent})")
    if saved.digest != ctx.digest:
        raise PlanFileError("the repo changed since the plan was made (digest differs); make a new plan")


async def _run_apply(client: CesClient, plan_: Plan, parallelism: int, force_delete: bool, fmt: str) -> ApplyResult:
    interrupt = asyncio.Event()
    loop = asyncio.get_running_loop()
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, interrupt.set)
    progress = _Progress(len(plan_.changes), enabled=fmt == "text")
    try:
        return await apply_plan(
            client, plan_, parallelism=parallelism, force_delete=force_delete, on_event=progress.event, interrupt=interrupt
        )
    finally:
        progress.close()
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)


class _Progress:
    """A progress bar on a terminal; one plain line per action elsewhere (CI logs)."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.enabled = enabled
        self.bar: Any = None
        if enabled and sys.stdout.isatty():
            from rich.progress import Progress

            self.bar = Progress(transient=True)
            self.task = self.bar.add_task("applying", total=total)
            self.bar.start()

    def event(self, o: Outcome) -> None:
        if not self.enabled:
            return
        line = f"{o.status}: {o.action} {o.kind} {o.id}" + (f" ({o.message})" if o.message else "")
        if self.bar is not None:
            self.bar.console.print(line)
            self.bar.advance(self.task)
        else:
            click.echo(line)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


@main.command()
@click.argument("planfile", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--provider", type=click.Choice(["github", "gitlab"]), help="Default: gitlab under GitLab CI, else github.")
@click.option("--pr", "number", type=int, help="The pull/merge request (default: the one this CI run is for).")
@click.option("--max-chars", type=click.IntRange(1000), default=GITHUB_COMMENT_LIMIT, show_default=True)
@click.option("--full-plan", help="Where the full plan is, for the note on a cut comment (default: the CI run's artifacts).")
@handled
def comment(planfile: Path, provider: str | None, number: int | None, max_chars: int, full_plan: str | None) -> None:
    """Keep one sticky plan comment per environment and app on the pull/merge request."""
    saved = _load_plan(planfile)
    target = find_target(os.environ, provider=provider, number=number)
    body = render_markdown(saved, max_chars=max_chars, full_plan=full_plan or run_link(os.environ) or "the CI job's artifacts")
    result = upsert_comment(target, MARKER.format(env=saved.environment, app=saved.app), body)
    click.echo(f"{result} the plan comment for '{saved.environment}' on #{target.number}")


@main.command()
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=Path("."), show_default=True)
@click.option("--env", "envs", multiple=True, help="Only these environments.")
@handled
def matrix(root: Path, envs: tuple[str, ...]) -> None:
    """List every (app folder, environment) under ROOT as JSON, for a CI matrix."""
    entries = find_apps(root, set(envs) or None)
    if not entries:
        raise CesyncError(f"no cesync.yaml{' with environment ' + ', '.join(envs) if envs else ''} under {root}")
    click.echo(json.dumps(entries))


# --- adoption and promotion -------------------------------------------------------------------

ENV_NAME = re.compile(r"^[a-z]([a-z0-9-]*[a-z0-9])?$")
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
@handled
def export(directory: Path, env_name: str | None, endpoint: str | None, out: Path, app_name: str | None, force: bool) -> None:
    """Write the app's tools and toolsets as a cesync repo (adopt an existing app)."""
    if app_name:
        name = _env_name(env_name or "default")
        config_text = config_for_app(name, app_name, endpoint)
        env, root = target_for_app(name, app_name, endpoint), out
    else:
        repo = load_repo(directory)
        env, root = repo.env(env_name), repo.root
        config_text = (repo.root / CONFIG_FILE).read_text(encoding="utf-8")

    async def run() -> tuple[ExportedRepo, list[Remote]]:
        async with connect(env, root, override=endpoint) as client:
            return await export_app(client, env, config_text)

    exported, remote = asyncio.run(run())
    check = plan_files(exported.files, env.name, remote)
    for change in check.changes:  # export must round-trip; say so loudly where it does not
        fields = ", ".join(f.path for f in change.fields) or change.action
        err(f"warning: {change.kind} {change.id} does not round-trip exactly ({fields}); check it by hand")
    if (out / ".gitignore").exists():
        exported.files.pop(".gitignore", None)
    state = root / ".cesync" / f"{env.name}.json"
    if not app_name and endpoint_for(env, endpoint) == EMBEDDED and state.is_file():
        # The embedded emulator's app lives in the repo folder: take it along, so the
        # exported repo plans against the same app.
        exported.files[f".cesync/{env.name}.json"] = state.read_text(encoding="utf-8")
    write_tree(out, exported.files, force=force)
    for note in exported.notes:
        err(f"note: {note}")
    counts = {k: sum(1 for r in remote if r.kind == k) for k in ("tool", "toolset")}
    click.echo(f"exported {counts['tool']} tools and {counts['toolset']} toolsets of {env.parent} to {out}")
    click.echo(f"next: cesync plan --dir {out} --env {env.name}   (shows no changes)")


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
    config_text = config_for_app(env_name, app_name, endpoint, contents.variables)
    env = target_for_app(env_name, app_name, endpoint, contents.variables)
    exported = export_repo(contents.resources, parent=env.parent, variables=env.vars, urls={}, config_text=config_text)
    repo_check = plan_files(exported.files, env.name, [])  # the result must load and validate
    write_tree(out, exported.files, force=force)
    for note in contents.notes + exported.notes:
        err(f"note: {note}")
    click.echo(
        f"imported {sum(1 for r in contents.resources if r.kind == 'tool')} tools and "
        f"{sum(1 for r in contents.resources if r.kind == 'toolset')} toolsets "
        f"({len(contents.variables)} environment values as vars) to {out}"
    )
    click.echo(f"next: cesync plan --dir {out} --env {env.name}   ({repo_check.counts()['create']} to create)")


@main.command("diff")
@dir_option
@click.option("--from", "from_env", required=True, help="The environment to promote from (e.g. dev).")
@click.option("--to", "to_env", required=True, help="The environment to promote to (e.g. prod).")
@endpoint_option
@format_option
@click.option("--detailed-exitcode", is_flag=True, help="Exit 0 when equal, 2 when they differ, 1 on error.")
@handled
def diff_cmd(directory: Path, from_env: str, to_env: str, endpoint: str | None, fmt: str, detailed_exitcode: bool) -> None:
    """What promoting one live environment to another would change.

    Reads both apps, turns FROM back into repo form with its own variables, renders
    that for TO, and plans it against TO (with prune: resources only in TO show as
    deletes).
    """
    repo = load_repo(directory)
    a, b = repo.env(from_env), repo.env(to_env)
    config_text = (repo.root / CONFIG_FILE).read_text(encoding="utf-8")

    async def run() -> tuple[ExportedRepo, list[Remote]]:
        async with connect(a, repo.root, override=endpoint) as ca, connect(b, repo.root, override=endpoint) as cb:
            (exported, _), remote_b = await asyncio.gather(export_app(ca, a, config_text), read_remote(cb, b.parent))
            return exported, remote_b

    exported, remote_b = asyncio.run(run())
    result = plan_files(exported.files, b.name, remote_b, prune=True)
    if fmt == "text":
        click.echo(f"Promoting '{a.name}' ({a.parent}) to '{b.name}' would change:")
    elif fmt == "markdown":
        click.echo(f"#### Promotion `{a.name}` → `{b.name}`\n")
    _print_plan(result, fmt)
    if detailed_exitcode and result.has_changes:
        sys.exit(EXIT_CHANGES)


# --- running tools ----------------------------------------------------------------------------


def _json_option(value: str | None, option: str) -> Any:
    """--args and friends: inline JSON, or @file holding JSON or YAML."""
    if value is None:
        return None
    if value.startswith("@"):
        path = Path(value[1:])
        text = read_text(path, str(path))
        if isinstance(text, Problem):
            raise CesyncError(f"{option}: {text}")
        doc = load_text(text, str(path))
        if isinstance(doc, Problem):
            raise CesyncError(f"{option}: {doc}")
        data = doc.data
    else:
        try:
            data = json.loads(value)
        except json.JSONDecodeError as exc:
            raise CesyncError(f"{option}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    if not isinstance(data, dict):
        raise CesyncError(f"{option}: expected a JSON object, got {type(data).__name__}")
    return data


@main.command("exec")
@click.argument("tool")
@dir_option
@env_option
@endpoint_option
@click.option("--args", "args_", help="Arguments: a JSON object, or @file (JSON or YAML).")
@click.option("--variables", help="Variables for the call: JSON or @file.")
@click.option("--context", "context_", help="A ToolCallContext for Python tools: JSON or @file (instead of --variables).")
@click.option("--mock", type=click.Path(dir_okay=False, path_type=Path), help="A mockConfig file (YAML or JSON).")
@click.option("--fail-on-error", is_flag=True, help="Exit 1 when the tool reports an error (isError).")
@click.option("--raw", is_flag=True, help="Print the executeTool response as it is.")
@handled
def exec_cmd(
    tool: str,
    directory: Path,
    env_name: str | None,
    endpoint: str | None,
    args_: str | None,
    variables: str | None,
    context_: str | None,
    mock: Path | None,
    fail_on_error: bool,
    raw: bool,
) -> None:
    """Run one tool (id, TOOLSET/TOOL_ID or display name) and print its canonical output."""
    if variables and context_:
        raise CesyncError("give --variables or --context, not both")
    arguments = _json_option(args_, "--args") or {}
    mocks = _json_option(f"@{mock}", "--mock") if mock else None
    repo = load_repo(directory)
    env = repo.env(env_name)

    async def run() -> dict[str, Any]:
        async with connect(env, repo.root, override=endpoint) as client:
            names = await tool_names(client, env.parent)
            request = request_for(
                tool,
                env.parent,
                arguments,
                variables=_json_option(variables, "--variables"),
                context=_json_option(context_, "--context"),
                mocks=mocks,
                names=names,
            )
            return await client.execute(env.parent, request)

    answer = asyncio.run(run())
    output = canonical_output(answer)
    click.echo(json.dumps(answer if raw else output, indent=2, ensure_ascii=False))
    if fail_on_error and output["isError"]:
        sys.exit(EXIT_ERROR)


@main.command("test")
@click.argument("pattern", required=False)
@dir_option
@env_option
@endpoint_option
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), help="Also write the results as JUnit XML here.")
@click.option("--parallelism", type=click.IntRange(1, 64), default=4, show_default=True)
@handled
def test_cmd(
    pattern: str | None, directory: Path, env_name: str | None, endpoint: str | None, junit: Path | None, parallelism: int
) -> None:
    """Run the tool tests in tests/*.yaml against the environment's app."""
    repo = load_repo(directory)
    env = repo.env(env_name)
    cases = load_tests(repo.root, pattern)
    if not cases:
        if pattern:
            raise CesyncError(f"no test matches {pattern!r}")
        click.echo("no tests: add tests/*.yaml (see the README, 'Tool tests')")
        return

    async def run() -> list[TestResult]:
        async with connect(env, repo.root, override=endpoint) as client:
            names = await tool_names(client, env.parent)

            async def call(case: Case) -> dict[str, Any]:
                request = request_for(
                    case.tool,
                    env.parent,
                    case.args,
                    variables=case.variables,
                    context=case.context,
                    mocks=case.mocks,
                    names=names,
                )
                return await client.execute(env.parent, request)

            return await run_cases(cases, call, parallelism)

    results = asyncio.run(run())
    click.echo(report(results), nl=False)
    if junit:
        _save(junit, junit_xml(results, suite=f"cesync {env.name}"))
    if any(r.status != "passed" for r in results):
        sys.exit(EXIT_ERROR)


# --- the emulator -----------------------------------------------------------------------------


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8765, show_default=True)
@click.option("--state", type=click.Path(dir_okay=False, path_type=Path), help="Persist to this JSON file (shared safely).")
@click.option("--latency-ms", type=float, default=0.0, help="Fixed latency added to every API call.")
@click.option("--jitter-ms", type=float, default=0.0, help="Random extra latency, up to this much.")
@click.option("--rate-429", type=click.FloatRange(0, 1), default=0.0, help="Share of calls answered RESOURCE_EXHAUSTED.")
@click.option("--rate-503", type=click.FloatRange(0, 1), default=0.0, help="Share of calls answered UNAVAILABLE.")
@click.option("--drop-rate", type=click.FloatRange(0, 1), default=0.0, help="Share of writes committed, then dropped.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the fault dice.")
@handled
def emulator(
    host: str,
    port: int,
    state: Path | None,
    latency_ms: float,
    jitter_ms: float,
    rate_429: float,
    rate_503: float,
    drop_rate: float,
    seed: int,
) -> None:
    """Run the local CES emulator (point cesync at it with CES_EMULATOR_HOST)."""
    from .emulator import FaultConfig
    from .emulator.server import serve

    faults = FaultConfig(latency_ms, jitter_ms, rate_429, rate_503, drop_rate, seed=seed)
    click.echo(f"CES emulator on http://{host}:{port} (export CES_EMULATOR_HOST={host}:{port})", err=True)
    try:
        serve(host, port, state, faults)
    except OSError as exc:
        raise CesyncError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None


if __name__ == "__main__":  # pragma: no cover
    main()
