"""validate, schema, init: the commands that work on the repo alone, with no app."""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..api.words import count
from ..errors import CesyncError, ConfigError, Problem
from . import (
    atomic_write,
    cli_vars,
    dir_option,
    err,
    handled,
    main,
    out,
    scrubber,
    var_options,
)
from . import out as say  # where a command's --out folder is called out

if TYPE_CHECKING:  # the commands import what they use: validate and schema start light
    from ..api.resource import Resource
    from ..repo.repo import Repo


@main.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the shell completion script for bash, zsh or fish (source it from your shell's start-up file).

    Commands, options, choices and the environments of the repo's cesync.yaml complete on Tab.
    """
    from click.shell_completion import get_completion_class

    cls = get_completion_class(shell)
    assert cls is not None  # click has all three
    out(cls(main, {}, "cesync", "_CESYNC_COMPLETE").source().rstrip("\n"))


@main.command()
@dir_option
@click.option("--env", "envs", multiple=True, help="Validate for these environments only (default: all).")
@click.option("--recursive", is_flag=True, help="Validate every folder with a cesync.yaml below --dir (one per app).")
@var_options
@click.option("--strict", is_flag=True, help="Fail on warnings too (literal credentials, a folder named like a kind's).")
@handled
def validate(
    directory: Path,
    envs: tuple[str, ...],
    recursive: bool,
    var_pairs: tuple[str, ...],
    var_files: tuple[Path, ...],
    strict: bool,
) -> None:
    """Check every file offline; report each problem as file:line:col."""
    folders = [directory]
    if recursive:
        from ..pipeline.discovery import find_apps

        folders = sorted({directory / e["dir"] for e in find_apps(directory, scrubber=scrubber())})
    if not folders:
        raise CesyncError(f"no cesync.yaml under {directory}")
    problems: list[Problem] = []
    variables = cli_vars(var_pairs, var_files)
    warnings: list[Problem] = []
    for folder in folders:
        prefix = folder.relative_to(directory) if recursive else None
        try:
            found, warned = _validate_one(folder, envs, prefix, variables, strict)
            problems += _prefixed(found, prefix)
            warnings += _prefixed(warned, prefix)
        except ConfigError as exc:
            problems += _prefixed(exc.problems, prefix)
    if strict and warnings:
        problems += warnings
    elif warnings:
        for w in warnings:
            err(str(w))
        err(f"{len(warnings)} warning{'s' if len(warnings) != 1 else ''} (--strict makes them fail)")
    if problems:
        raise ConfigError(problems)


def _test_problems(repo: Repo) -> list[Problem]:
    """tests/*.yaml checked as 'cesync test' reads them, and each test's tool against the repo's tools."""
    if not (repo.root / "tests").is_dir():
        return []  # no tests: nothing to load, and the tests' modules stay unimported (validate starts light)
    from ..models import TOOL_TYPES
    from ..tooltests.schema import load_tests, unknown_tools

    try:
        cases = load_tests(repo.root)
    except ConfigError as exc:
        return list(exc.problems)
    names: dict[str, str] = {}
    toolsets: set[str] = set()
    for src in repo.files:
        data = src.doc.data if isinstance(src.doc.data, dict) else {}
        if src.kind.named_by_type:
            kind = next((k for k in TOOL_TYPES if isinstance(data.get(k), dict)), None)
            aliases = [data.get("displayName"), data[kind].get("name") if kind else None]
        elif src.kind.holds_tools:
            aliases = [data.get("displayName")]
            toolsets |= {src.id, *(a for a in aliases if isinstance(a, str))}
        else:
            continue
        for alias in aliases:
            if isinstance(alias, str) and alias:
                names.setdefault(alias, src.id)
        names.setdefault(src.id, src.id)
    return unknown_tools(cases, names, toolsets)


def _answer_warnings(repo: Repo) -> list[Problem]:
    """Goldens and tool tests of Python tools that expect an answer outside 'result'."""
    from ..repo.answers import python_answer_warnings

    cases = []
    if (repo.root / "tests").is_dir():
        from ..tooltests.schema import load_tests

        with contextlib.suppress(ConfigError):  # their problems are reported by _test_problems
            cases = load_tests(repo.root)
    return python_answer_warnings(repo.files, cases)


def _prefixed(problems: list[Problem], prefix: Path | None) -> list[Problem]:
    """Problems of one app folder, named from the folder validate --recursive started in."""
    if prefix is None or str(prefix) == ".":
        return problems
    return [dataclasses.replace(p, file=str(prefix / p.file)) for p in problems]


def _validate_one(
    directory: Path, envs: tuple[str, ...], prefix: Path | None, variables: dict[str, str], strict: bool
) -> tuple[list[Problem], list[Problem]]:
    from ..pipeline.masking import remember_sensitive
    from ..repo.credentials import lint_credentials
    from ..repo.repo import load_repo

    repo = load_repo(directory)
    repo.overrides = variables
    remember_sensitive(scrubber(), repo)  # before the command's first output
    names = list(envs) or repo.env_names
    for name in names:
        env = repo.env(name)  # unknown names fail here with the list of known ones
        remember_sensitive(scrubber(), repo, repo.sensitive_values(env))  # before rendering: a problem message must not print one
    rendered: dict[str, list[Resource]] = {}
    problems = repo.validate(names, rendered) + _test_problems(repo)
    from ..repo.environments import shared_apps
    from ..repo.loading import misplaced_files

    warnings = lint_credentials(repo) + shared_apps(repo.config, repo.config_doc) + misplaced_files(repo.root)
    warnings += _answer_warnings(repo)
    problems += _release_problems(repo)
    if not problems:  # the policies judge what renders: only a repo that renders cleanly
        from ..repo.toolids import unknown_tool_ids

        warnings += unknown_tool_ids(repo.files)
        denied, warned = _policy_problems(repo, names, rendered)
        problems += denied
        warnings += warned
    repo.keep_cache()
    if not problems and not (strict and warnings):  # under --strict a warning fails: no "ok" before it
        count = len(repo.files)
        where = f" in {prefix}" if prefix is not None else ""
        out(f"ok: {count} file{'s' if count != 1 else ''}{where} valid for {', '.join(names)}")
    return problems, warnings


def _release_problems(repo: Repo) -> list[Problem]:
    """releases/*.yaml checked as 'cesync release' reads them, each naming a deployment of the repo."""
    from ..repo.releases import FOLDER, load_release

    folder = repo.root / FOLDER
    found: list[Problem] = []
    deployments = {f.id for f in repo.files if f.kind.serves}  # a schedule moves what a deployment serves
    for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
        try:
            load_release(repo.root, path.stem)
        except ConfigError as exc:
            found += exc.problems
            continue
        if path.stem not in deployments:
            said = f"no deployments/{path.stem}.yaml: a schedule releases the deployment its file is named for"
            found.append(Problem(f"{FOLDER}/{path.name}", 1, 1, said))
    return found


def _policy_problems(repo: Repo, names: list[str], rendered: dict[str, list[Resource]]) -> tuple[list[Problem], list[Problem]]:
    """The repo's policies (rules on: resource) on each environment's rendered resources: a deny is a
    problem, a warn a warning, each at the resource's file."""
    if not repo.config.policies:
        return [], []  # none named: the policy engine stays unimported
    from ..pipeline.policies import policies_of, resource_findings

    policies = policies_of(repo)
    if not policies:
        return [], []
    denied: list[Problem] = []
    warned: list[Problem] = []
    files = {(f.kind.name, f.id): f.doc.file for f in repo.files}
    for name in names:  # as validate rendered them: not rendered again
        resources = rendered[name] if name in rendered else repo.render(repo.env(name))
        for f in resource_findings(policies, name, resources):
            kind, _, rid = f.subject.partition("/")
            problem = Problem(files.get((kind, rid), "cesync.yaml"), 1, 1, f"[{name}] policy {f.verdict} {f.rule}: {f.message}")
            (denied if f.verdict == "deny" else warned).append(problem)
    return denied, warned


@main.command()
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("schemas"),
    show_default=True,
    help="The folder to write the schemas to.",
)
@click.option("--check", is_flag=True, help="Exit 1 if the files in --out are missing or not current.")
@handled
def schema(out: Path, check: bool) -> None:
    """Write JSON Schemas for cesync.yaml and every kind's files."""
    from ..repo.jsonschema import render_schemas

    missing: list[str] = []
    stale: list[str] = []
    for name, text in render_schemas().items():
        path = out / name
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current == text:
            continue
        (missing if current is None else stale).append(str(path))
        if not check:
            out.mkdir(parents=True, exist_ok=True)
            atomic_write(path, text)
    if check and (missing or stale):
        what = "; ".join(
            f"{label} JSON Schemas: {', '.join(paths)}" for label, paths in (("missing", missing), ("stale", stale)) if paths
        )
        raise CesyncError(f"{what}; run 'cesync schema --out {out}'")
    say(f"ok: {count(len(missing) + len(stale), 'schema file')} {'written' if not check else 'out of date'}")


@main.command()
@dir_option
@click.option("--app", default="my-app", show_default=True, help="The CES app id of the local environment.")
@handled
def init(directory: Path, app: str) -> None:
    """Scaffold a new repo: cesync.yaml, an example tool, the JSON Schemas its editor modelines name, .gitignore."""
    from ..repo.config import check_segment
    from ..repo.scaffold import write_scaffold

    try:  # before any file: a cesync.yaml that does not validate is no start
        check_segment(app, "app")
    except ValueError as exc:
        raise CesyncError(f"--app: {exc} (the app's id alone, e.g. support-bot)") from None
    for path in write_scaffold(directory, app):
        out(f"created {path}")
    out("next: cesync validate && cesync plan --env local")
