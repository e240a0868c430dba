"""Running tools: exec and test."""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import json
import sys
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import click

from ..api.kinds import KINDS
from ..api.words import count
from ..client import connect
from ..client.api import CesClient
from ..core.toolcall import canonical_output, request_for, unknown_tool
from ..core.yamlfile import load_text, read_text
from ..errors import CesyncError, NotFound, Problem
from ..pipeline.toolnames import tool_names
from ..repo.repo import load_repo
from ..tooltests import Case, junit_xml, load_tests, report, results_json, run_cases
from ..tooltests import Result as TestResult
from ..tooltests.scrapi import app_variables, scrapi_request
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

# --- running tools ----------------------------------------------------------------------------


def _json_option(value: str | None, option: str) -> Any:
    """--args and friends: inline JSON, or @file holding JSON or YAML (@- reads standard input)."""
    if value is None:
        return None
    if value.startswith("@"):
        where = "standard input" if value == "@-" else value[1:]
        text = sys.stdin.read() if value == "@-" else read_text(Path(where), where)
        if isinstance(text, Problem):
            raise CesyncError(f"{option}: {text}")
        doc = load_text(text, where)
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


async def _execute(
    client: CesClient,
    parent: str,
    names: dict[str, str],
    tool: str,
    args: dict[str, Any],
    variables: dict[str, Any] | None,
    context: dict[str, Any] | None,
    mocks: Any,
) -> dict[str, Any]:
    """One executeTool call, the tool and mocked tools named as a user names them."""
    request = request_for(tool, parent, args, variables=variables, context=context, mocks=mocks, names=names)
    return await client.execute(parent, request)


local_option = click.option(
    "--local",
    is_flag=True,
    help="Run the repo's tools, not the deployed ones: render the repo into a fresh in-memory emulator app "
    "and run there (nothing is deployed or written).",
)
preview_option = click.option(
    "--preview", "preview_name", metavar="NAME", help="Run against the environment's preview app NAME (see 'cesync preview')."
)
strict_option = click.option(
    "--strict", is_flag=True, help="Fail (exit 1) when a tool run differs from what the repo defines (or the repo cannot render)."
)


@contextlib.asynccontextmanager
async def _tools_session(
    directory: Path,
    env_name: str | None,
    endpoint: str | None,
    variables: dict[str, str],
    *,
    local: bool,
    strict: bool,
    tools: Iterable[str],
    preview: str | None = None,
) -> AsyncIterator[tuple[CesClient, str, dict[str, str]]]:
    """(client, app, names) for running tools: the repo's own in a local app with --local;
    otherwise the environment's app, with a word (or, --strict, an error) for every tool
    that runs code the repo no longer defines."""
    from ..pipeline.context import open_context
    from ..pipeline.local import deployed_differences, local_app, tool_keys
    from ..pipeline.preview import preview_env

    if local and preview:
        raise CesyncError("give --local or --preview, not both")
    if local:
        ctx = open_context(directory, env_name, endpoint, variables, scrubber=scrubber())
        async with local_app(ctx) as client:
            yield client, ctx.env.parent, await tool_names(client, ctx.env.parent)
        return
    try:
        ctx = open_context(directory, env_name, endpoint, variables, preview=preview, scrubber=scrubber())
    except CesyncError as exc:
        if strict:
            raise CesyncError(
                f"--strict: the repo does not render, so the deployed tools cannot be compared with it: {exc}"
            ) from None
        repo = load_repo(directory, resources=False)
        from ..pipeline.masking import remember_sensitive

        remember_sensitive(scrubber(), repo)  # before the command's first output
        env = repo.env(env_name) if preview is None else preview_env(repo.env(env_name), preview)
        err(f"warning: the deployed tools were not compared with the repo (it does not render: {str(exc).splitlines()[0]})")
        async with connect(env, repo.root, override=endpoint, scrubber=scrubber()) as client:
            yield client, env.parent, await tool_names(client, env.parent)
        return
    async with ctx.client() as client:
        names = await tool_names(client, ctx.env.parent)
        differences = await deployed_differences(ctx, client, tool_keys(tools, names))
        for d in differences:
            err(
                f"{'error' if strict else 'warning'}: {d.describe()}: this runs the deployed code, not the repo's "
                "(apply first, or use --local)"
            )
        if strict and differences:
            raise CesyncError(f"--strict: {count(len(differences), 'tool')} differ from the repo in '{ctx.env.name}'")
        yield client, ctx.env.parent, names


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
@local_option
@preview_option
@strict_option
@var_options
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
    local: bool,
    preview_name: str | None,
    strict: bool,
    var_pairs: tuple[str, ...],
    var_files: tuple[Path, ...],
) -> None:
    """Run one tool (id, TOOLSET/TOOL_ID or display name) and print its canonical output."""
    if variables and context_:
        raise CesyncError("give --variables or --context, not both")
    arguments = _json_option(args_, "--args") or {}
    given_variables, given_context = _json_option(variables, "--variables"), _json_option(context_, "--context")
    mocks = _json_option(f"@{mock}", "--mock") if mock else None
    session = _tools_session(
        directory,
        env_name,
        endpoint,
        cli_vars(var_pairs, var_files),
        local=local,
        strict=strict,
        tools=[tool],
        preview=preview_name,
    )

    async def run() -> dict[str, Any]:
        async with session as (client, parent, names):
            try:
                return await _execute(client, parent, names, tool, arguments, given_variables, given_context, mocks)
            except NotFound as exc:
                tools = await client.resources(parent, KINDS["tool"])
                known = sorted({t.id for t in tools} | set(names))
                close = difflib.get_close_matches(tool, known, n=3, cutoff=0.5)
                hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
                where = "the repo" if local else parent
                raise CesyncError(f"no tool {tool!r} in {where}{hint} ({exc})") from None

    answer = asyncio.run(run())
    output = canonical_output(answer)
    out(json.dumps(answer if raw else output, indent=2, ensure_ascii=False))
    if fail_on_error and output["isError"]:
        sys.exit(EXIT_ERROR)


@main.command("test")
@click.argument("pattern", required=False)
@dir_option
@env_option
@endpoint_option
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), help="Also write the results as JUnit XML here.")
@click.option("--parallelism", type=click.IntRange(1, 64), default=4, show_default=True, help="Run this many tests at once.")
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="How to report the results."
)
@local_option
@preview_option
@strict_option
@click.option(
    "--affected-by",
    "affected_by",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="PLANFILE",
    help="Only the tests a saved plan (plan --out) puts at risk: those of the tools it changes.",
)
@var_options
@handled
def test_cmd(
    pattern: str | None,
    directory: Path,
    env_name: str | None,
    endpoint: str | None,
    junit: Path | None,
    parallelism: int,
    fmt: str,
    local: bool,
    preview_name: str | None,
    strict: bool,
    affected_by: Path | None,
    var_pairs: tuple[str, ...],
    var_files: tuple[Path, ...],
) -> None:
    """Run the tool tests in tests/*.yaml against the environment's app (--local: against the repo)."""
    repo = load_repo(directory, resources=False)
    from ..pipeline.masking import remember_sensitive

    remember_sensitive(scrubber(), repo)  # before the command's first output
    env = repo.env(env_name)
    cases = load_tests(repo.root, pattern)
    if affected_by is not None:
        at_risk = {t for found in load_plan(affected_by).affected.values() for t in found.get("toolTests", [])}
        cases = [c for c in cases if c.id in at_risk]
        if not cases:
            out(f"{affected_by} puts no tool test at risk: nothing to run")
            return
    if not cases:
        if pattern:
            raise CesyncError(f"no test matches {pattern!r}")
        out("no tests: add tests/*.yaml (see the docs, Commands: 'cesync test')")
        return

    session = _tools_session(
        directory,
        env_name,
        endpoint,
        cli_vars(var_pairs, var_files),
        local=local,
        strict=strict,
        tools=[c.tool for c in cases],
        preview=preview_name,
    )

    async def run() -> list[TestResult]:
        async with session as (client, parent, names):
            # cxas-scrapi fills a test's variables from the app's declarations: read them as it does (GetApp)
            app = app_variables(await client.get(parent)) if any(c.style == "cxas-scrapi" for c in cases) else {}

            async def call(case: Case) -> dict[str, Any]:
                missing = None if case.api_error else unknown_tool(case.tool, names)
                if missing:  # the test is wrong, not the tool: an error with the closest names, not a failure
                    raise CesyncError(f"{missing} (the test cannot run)")
                variables, context = case.variables, case.context
                if case.style == "cxas-scrapi":
                    variables, context = scrapi_request(variables, context, app)
                return await _execute(client, parent, names, case.tool, case.args, variables, context, case.mocks)

            return await run_cases(cases, call, parallelism)

    results = asyncio.run(run())
    out(report(results) if fmt == "text" else json.dumps(results_json(results), indent=2), nl=fmt == "json")
    if junit:
        save(junit, junit_xml(results, suite=f"cesync {env.name}" + (" (local)" if local else "")))
    if any(r.status != "passed" for r in results):
        sys.exit(EXIT_ERROR)
