"""The test-file schema: cases as pydantic dataclasses, read from ``tests/*.yaml``.

Every problem is reported at its ``file:line:col`` (the checks below are written by hand,
not left to pydantic's own messages, so each one says what to write instead).
"""

from __future__ import annotations

import fnmatch
import functools
import re
from dataclasses import field, replace
from pathlib import Path
from typing import Any

import yaml
from jsonpath_ng.exceptions import JsonPathParserError
from jsonpath_ng.parser import parse as jsonpath  # cxas-scrapi's parser (jsonpath_ng.parse), not the extended one
from pydantic.dataclasses import dataclass

from ..core.checks import suggest
from ..core.yamlfile import Document, load_text, read_text
from ..errors import ConfigError, Problem

__all__ = ["OPERATORS", "REGEX", "Case", "Expectation", "load_tests", "unknown_tools"]

OPERATORS = (
    "equals",
    "contains",
    "greater_than",
    "less_than",
    "length_equals",
    "length_greater_than",
    "length_less_than",
    "is_null",
    "is_not_null",
)
NATIVE_KEYS = {"name", "toolCall", "toolResponse", "variables", "context", "mockConfig", "expectVariables", "description"}
SCRAPI_KEYS = {"name", "tool", "args", "agrs", "variables", "context", "expectations", "description"}
CAPTURED = {"id", "displayName", "parentToolCallId", "agentName", "targetApp"}  # output-only chunk fields
REGEX = "$regex"


@dataclass(frozen=True)
class Expectation:
    path: str
    operator: str
    value: Any = None


@dataclass(frozen=True)
class Case:
    file: str
    line: int
    name: str
    tool: str
    args: dict[str, Any] = field(default_factory=dict)
    variables: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    mocks: dict[str, Any] | None = None
    response: Any = None  # cesync: the expected response (subset); None = not checked
    api_error: str | None = None  # cesync: the call itself must fail with this status (or message regex)
    expect_variables: Any = None
    checks: tuple[Expectation, ...] = ()  # cxas-scrapi: on the response
    variable_checks: tuple[Expectation, ...] = ()  # cxas-scrapi: on the variables after the call
    style: str = "cesync"
    tool_at: tuple[int, int] = (0, 0)  # line and column of the tool's name in the file

    @property
    def id(self) -> str:
        return f"{self.file}::{self.name}"


def unknown_tools(cases: list[Case], names: dict[str, str], toolsets: set[str]) -> list[Problem]:
    """A problem for each case whose tool the repo does not define (names: every name -> local id).

    toolsets: the toolsets' ids and display names, whose OpenAPI tools cxas-scrapi names NAME_OPERATION.
    """
    from ..core.toolcall import unknown_tool

    out = []
    for case in cases:
        if case.api_error or any(case.tool.startswith(f"{t}_") for t in toolsets):
            continue
        missing = unknown_tool(case.tool, names, "the repo")
        if missing:
            out.append(Problem(case.file, *case.tool_at, f"test '{case.name}': {missing}"))
    return out


# --- loading --------------------------------------------------------------------------------


def load_tests(root: Path, pattern: str | None = None) -> list[Case]:
    """Every case in root/tests/*.yaml matching pattern (a glob or substring of file::name)."""
    folder = root / "tests"
    cases: list[Case] = []
    problems: list[Problem] = []
    for path in sorted(folder.glob("*.y*ml")) if folder.is_dir() else []:
        if path.suffix not in (".yaml", ".yml"):
            continue
        display = str(path.relative_to(root))
        text = read_text(path, display, root=root.resolve())
        doc = load_text(text, display) if isinstance(text, str) else text
        if isinstance(doc, Problem):
            problems.append(doc)
            continue
        cases += _cases(doc, problems, text if isinstance(text, str) else "")
    if problems:
        raise ConfigError(problems)
    names = [c.id for c in cases]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError([Problem(d.split("::")[0], 1, 1, f"duplicate test name '{d.split('::', 1)[1]}'") for d in dupes])
    if pattern:
        cases = [c for c in cases if fnmatch.fnmatch(c.id, pattern) or pattern in c.id]
    return cases


def _cases(doc: Document, problems: list[Problem], text: str = "") -> list[Case]:
    data = doc.data
    if not isinstance(data, dict) or not isinstance(data.get("tests"), list):
        problems.append(doc.problem((), "a test file is a mapping with a 'tests' list"))
        return []
    out: list[Case] = []
    for i, raw in enumerate(data["tests"]):
        at: tuple[str | int, ...] = ("tests", i)
        if not isinstance(raw, dict):
            problems.append(doc.problem(at, "each test is a mapping"))
            continue
        found: list[Problem] = []
        if "toolCall" not in raw and "tool" not in raw and _misspelt_tool_call(raw):
            _unknown(doc, raw, NATIVE_KEYS, at, found)  # toolCal: did you mean 'toolCall'? (one problem, not two)
            problems += found
            continue
        case = _native(doc, raw, at, found) if "toolCall" in raw else _scrapi(doc, raw, at, found)
        if case is not None and case.style == "cxas-scrapi" and not found:
            case = _as_scrapi_reads(doc, case, text, i, found)
        problems += found
        if case is not None and not found:
            out.append(case)
    return out


@functools.lru_cache(maxsize=16)
def _pyyaml(text: str) -> Any:
    """A test file as cxas-scrapi loads it (``yaml.safe_load``), once per file; callers must not modify it."""
    return yaml.safe_load(text)


def _as_scrapi_reads(doc: Document, case: Case, text: str, index: int, found: list[Problem]) -> Case:
    """The case's values as cxas-scrapi reads them: PyYAML's YAML 1.1 (``yes`` is true, ``1:20`` is 80, ``012`` octal)."""
    try:
        data = _pyyaml(text)
    except yaml.YAMLError as exc:
        found.append(doc.problem((), f"cxas-scrapi reads test files with PyYAML, which cannot read this one: {exc}"))
        return case
    raw = data["tests"][index] if isinstance(data, dict) and isinstance(data.get("tests"), list) else None
    if not isinstance(raw, dict):
        return case
    variables = raw.get("variables")
    if isinstance(variables, list):
        variables = {n: None for n in variables if isinstance(n, str)}
    expectations: dict[str, Any] = raw["expectations"] if isinstance(raw.get("expectations"), dict) else {}

    def values(key: str, checks: tuple[Expectation, ...]) -> tuple[Expectation, ...]:
        items: list[Any] = expectations[key] if isinstance(expectations.get(key), list) else []
        return tuple(
            replace(e, value=item.get("value")) if isinstance(item, dict) else e for e, item in zip(checks, items, strict=False)
        )

    return replace(
        case,
        args=raw.get("args", raw.get("agrs")) or {},
        variables=variables if isinstance(variables, dict) else case.variables,
        context=raw.get("context") if isinstance(raw.get("context"), dict) else case.context,
        checks=values("response", case.checks),
        variable_checks=values("variables", case.variable_checks),
    )


def _misspelt_tool_call(raw: dict[str, Any]) -> bool:
    return any(suggest(str(k), ["toolCall", "toolResponse"]) for k in raw if k not in NATIVE_KEYS | SCRAPI_KEYS)


def _mapping(doc: Document, raw: dict[str, Any], key: str, at: tuple[str | int, ...], found: list[Problem]) -> Any:
    value = raw.get(key)
    if value is not None and not isinstance(value, dict):
        found.append(doc.problem((*at, key), f"{key} must be a mapping"))
        return None
    return value


def _unknown(doc: Document, raw: dict[str, Any], allowed: set[str], at: tuple[str | int, ...], found: list[Problem]) -> None:
    for key in raw:
        if key not in allowed:
            found.append(doc.problem((*at, key), f"unknown test field '{key}'{suggest(str(key), sorted(allowed))}", key=True))


def _common(doc: Document, raw: dict[str, Any], at: tuple[str | int, ...], found: list[Problem]) -> dict[str, Any]:
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        found.append(doc.problem(at, "each test needs a name"))
    variables, context = _mapping(doc, raw, "variables", at, found), _mapping(doc, raw, "context", at, found)
    if variables is not None and context is not None:
        found.append(doc.problem((*at, "context"), "give variables or context, not both", key=True))
    line, _ = doc.positions.at(at)
    return {
        "file": doc.file,
        "line": line,
        "name": str(name),
        "variables": variables,
        "context": context,
        "mocks": _mapping(doc, raw, "mockConfig", at, found),
    }


def _native(doc: Document, raw: dict[str, Any], at: tuple[str | int, ...], found: list[Problem]) -> Case | None:
    _unknown(doc, raw, NATIVE_KEYS, at, found)
    common = _common(doc, raw, at, found)
    call = raw["toolCall"]
    if not isinstance(call, dict):
        found.append(doc.problem((*at, "toolCall"), "toolCall must be a mapping with tool (or toolsetTool) and args"))
        return None
    _unknown(doc, call, {"tool", "toolsetTool", "args"} | CAPTURED, (*at, "toolCall"), found)
    tool = call.get("tool")
    ts = call.get("toolsetTool")
    if isinstance(ts, dict) and ts.get("toolset") and ts.get("toolId"):
        tool = f"{str(ts['toolset']).rsplit('/', 1)[-1]}/{ts['toolId']}"
    if not isinstance(tool, str) or not tool:
        found.append(doc.problem((*at, "toolCall"), "toolCall needs tool (an id) or toolsetTool {toolset, toolId}"))
        return None
    args = _mapping(doc, call, "args", (*at, "toolCall"), found) or {}
    tool_at = doc.positions.at((*at, "toolCall", "tool" if "tool" in call else "toolsetTool"))
    expected = raw.get("toolResponse")
    if not isinstance(expected, dict):
        if not any("did you mean 'toolResponse'" in f.message for f in found):  # a misspelt key says it already
            found.append(doc.problem(at, "each test needs toolResponse: {response: ...} or {apiError: STATUS}"))
        return None
    _unknown(doc, expected, {"response", "apiError"} | CAPTURED | {"tool", "toolsetTool"}, (*at, "toolResponse"), found)
    _regexes(doc, expected.get("response"), (*at, "toolResponse", "response"), found)
    api_error = expected.get("apiError")
    return Case(
        tool=tool,
        args=args,
        response=expected.get("response"),
        api_error=str(api_error) if api_error is not None else None,
        expect_variables=raw.get("expectVariables"),
        tool_at=tool_at,
        **common,
    )


def _regexes(doc: Document, value: Any, at: tuple[str | int, ...], found: list[Problem]) -> None:
    if isinstance(value, dict):
        if set(value) == {REGEX}:
            try:
                re.compile(str(value[REGEX]))
            except re.error as exc:
                found.append(doc.problem((*at, REGEX), f"invalid regular expression: {exc}"))
            return
        for k, v in value.items():
            _regexes(doc, v, (*at, k), found)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _regexes(doc, v, (*at, i), found)


def _scrapi(doc: Document, raw: dict[str, Any], at: tuple[str | int, ...], found: list[Problem]) -> Case | None:
    """A cxas-scrapi test, read as cxas-scrapi 1.10 reads it (see scrapi.py for what it sends)."""
    if "mockConfig" in raw:
        found.append(
            doc.problem(
                (*at, "mockConfig"),
                "cxas-scrapi's tool tests have no mockConfig: cxas-scrapi ignores it and runs the real tools it calls; "
                "write this test in cesync's format (toolCall, toolResponse) to mock them",
                key=True,
            )
        )
    raw = {k: v for k, v in raw.items() if k != "mockConfig"}
    if isinstance(raw.get("variables"), list):  # names only: the app's values
        names = raw["variables"]
        if not all(isinstance(n, str) for n in names):
            found.append(doc.problem((*at, "variables"), "variables is a mapping, or a list of the app's variable names"))
        raw = {**raw, "variables": {n: None for n in names if isinstance(n, str)}}
    if "agrs" in raw:  # scrapi's alias for args
        if "args" in raw:
            found.append(doc.problem((*at, "agrs"), "give args or agrs (cxas-scrapi's alias), not both", key=True))
        raw = {**{k: v for k, v in raw.items() if k != "agrs"}, "args": raw["agrs"]}
    _unknown(doc, raw, SCRAPI_KEYS, at, found)
    common = _common(doc, raw, at, found)
    tool = raw.get("tool")
    if not isinstance(tool, str) or not tool:
        found.append(doc.problem(at, "each test needs toolCall (cesync format) or tool (cxas-scrapi format)"))
        return None
    expectations = _mapping(doc, raw, "expectations", at, found) or {}
    _unknown(doc, expectations, {"response", "variables"}, (*at, "expectations"), found)
    lists = {}
    for key in ("response", "variables"):
        items = expectations.get(key) or []
        here = (*at, "expectations", key)
        if not isinstance(items, list):
            found.append(doc.problem(here, f"expectations.{key} must be a list of {{path, operator, value}}"))
            items = []
        lists[key] = tuple(e for j, item in enumerate(items) if (e := _expectation(doc, item, (*here, j), found)))
    return Case(
        tool=tool,
        args=_mapping(doc, raw, "args", at, found) or {},
        checks=lists["response"],
        variable_checks=lists["variables"],
        style="cxas-scrapi",
        tool_at=doc.positions.at((*at, "tool")),
        **common,
    )


def _expectation(doc: Document, item: Any, at: tuple[str | int, ...], found: list[Problem]) -> Expectation | None:
    if not isinstance(item, dict) or not isinstance(item.get("path"), str) or not isinstance(item.get("operator"), str):
        found.append(doc.problem(at, "an expectation is {path: $.x, operator: equals, value: ...}"))
        return None
    op = item["operator"]
    if op not in OPERATORS:
        found.append(
            doc.problem(
                (*at, "operator"), f"unknown operator '{op}'{suggest(op, list(OPERATORS))} (known: {', '.join(OPERATORS)})"
            )
        )
        return None
    try:
        jsonpath(item["path"])
    except (JsonPathParserError, Exception) as exc:  # the parser raises plain Exceptions too
        found.append(doc.problem((*at, "path"), f"invalid JSONPath {item['path']!r}: {exc}"))
        return None
    return Expectation(item["path"], op, item.get("value"))
