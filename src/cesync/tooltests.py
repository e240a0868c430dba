"""Tool tests kept in the user's repo (``tests/*.yaml``): loading, checking, reporting.

Two formats, told apart per test case:

- cesync's own, in the conversation vocabulary (seeds 000 and 002): a ``toolCall``
  and the expected ``toolResponse``; the response is matched as a subset, and a
  string written ``{$regex: ...}`` is a regular expression for the whole string;
- Google cxas-scrapi's tool tests, as they are: ``tool``, ``args``, ``variables``,
  ``expectations: {response: [{path, operator, value}], variables: [...]}`` with
  JSONPath paths.

Loading, checking and rendering are pure; running (tooltests.run) needs a client.
"""

from __future__ import annotations

import asyncio
import fnmatch
import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonpath_ng.exceptions import JsonPathParserError
from jsonpath_ng.ext.parser import parse as jsonpath

from .checks import suggest
from .errors import ApiError, ConfigError, Problem
from .yamlfile import Document, load_text, read_text

__all__ = ["Case", "Expectation", "Result", "check", "junit_xml", "load_tests", "report", "results_json", "run_cases"]

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
SCRAPI_KEYS = {"name", "tool", "args", "variables", "context", "expectations", "mockConfig", "description"}
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

    @property
    def id(self) -> str:
        return f"{self.file}::{self.name}"


@dataclass(frozen=True)
class Result:
    case: Case
    status: str  # passed | failed | error
    messages: tuple[str, ...] = ()
    seconds: float = 0.0
    answer: dict[str, Any] | None = None


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
        cases += _cases(doc, problems)
    if problems:
        raise ConfigError(problems)
    names = [c.id for c in cases]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError([Problem(d.split("::")[0], 1, 1, f"duplicate test name '{d.split('::', 1)[1]}'") for d in dupes])
    if pattern:
        cases = [c for c in cases if fnmatch.fnmatch(c.id, pattern) or pattern in c.id]
    return cases


def _cases(doc: Document, problems: list[Problem]) -> list[Case]:
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
        problems += found
        if case is not None and not found:
            out.append(case)
    return out


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
    expected = raw.get("toolResponse")
    if not isinstance(expected, dict):
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


# --- checking (pure) ------------------------------------------------------------------------


def check(case: Case, answer: dict[str, Any] | None, error: ApiError | None) -> list[str]:
    """What does not hold; empty when the test passes."""
    if error is not None:
        if case.api_error and (case.api_error == error.status or re.search(case.api_error, str(error))):
            return []
        return [f"the call failed: {error}"]
    assert answer is not None
    if case.api_error:
        return [f"expected the call to fail with {case.api_error}, but it answered {answer.get('response')}"]
    response = answer.get("response") or {}
    variables = answer.get("variables") or {}
    failures: list[str] = []
    if case.response is not None:
        failures += _subset(case.response, response, "response")
    if case.expect_variables is not None:
        failures += _subset(case.expect_variables, variables, "variables")
    failures += [f for e in case.checks if (f := _expect(e, response, "response"))]
    failures += [f for e in case.variable_checks if (f := _expect(e, variables, "variables"))]
    tool_error = response.get("error") if isinstance(response, dict) else None
    if failures and tool_error is not None and not _expects_error(case):
        # The expectations fail because the tool itself failed: say how, not only "missing".
        failures.append(f"the tool reported an error: {_show(tool_error)}")
    return failures


def _expects_error(case: Case) -> bool:
    expected = case.response if isinstance(case.response, dict) else {}
    return "error" in expected or any(re.match(r"\$\.error\b", e.path) for e in case.checks)


def _subset(expected: Any, actual: Any, path: str) -> list[str]:
    if isinstance(expected, dict) and set(expected) == {REGEX}:
        pattern = str(expected[REGEX])
        if isinstance(actual, str) and re.fullmatch(pattern, actual, re.DOTALL):
            return []
        return [f"{path}: {_show(actual)} does not match /{pattern}/"]
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: expected a mapping, got {_show(actual)}"]
        out: list[str] = []
        for key, value in expected.items():
            if key not in actual:
                out.append(f"{path}.{key}: missing (got keys {sorted(actual)})")
            else:
                out += _subset(value, actual[key], f"{path}.{key}")
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{path}: expected a list of {len(expected)}, got {_show(actual)}"]
        return [m for i, (e, a) in enumerate(zip(expected, actual, strict=True)) for m in _subset(e, a, f"{path}[{i}]")]
    if _equal(expected, actual):
        return []
    return [f"{path}: expected {_show(expected)}, got {_show(actual)}"]


def _equal(a: Any, b: Any) -> bool:
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        return float(a) == float(b)
    return bool(a == b) and type(a) is type(b)


def _expect(e: Expectation, data: Any, where: str) -> str | None:
    matches = [m.value for m in jsonpath(e.path).find(data)]
    actual = None if not matches else matches[0] if len(matches) == 1 else matches
    if _holds(e.operator, actual, e.value):
        return None
    return f"{where} {e.path} {e.operator} {_show(e.value)}: got {_show(actual)}"


def _holds(op: str, actual: Any, expected: Any) -> bool:
    """cxas-scrapi's operators, with its semantics."""
    try:
        if op == "equals":
            return bool(actual == expected)
        if op == "contains":
            return isinstance(actual, (str, list, dict)) and expected in actual
        if op == "greater_than":
            return bool(actual > expected)
        if op == "less_than":
            return bool(actual < expected)
        if op == "length_equals":
            return bool(len(actual) == expected)
        if op == "length_greater_than":
            return bool(len(actual) > expected)
        if op == "length_less_than":
            return bool(len(actual) < expected)
    except TypeError:
        return False
    if op == "is_null":
        return actual is None
    return actual is not None  # is_not_null


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


# --- running --------------------------------------------------------------------------------

Call = Callable[[Case], Awaitable[dict[str, Any]]]


async def run_cases(cases: list[Case], call: Call, parallelism: int = 4) -> list[Result]:
    gate = asyncio.Semaphore(parallelism)

    async def one(case: Case) -> Result:
        async with gate:
            start = time.perf_counter()
            answer, error = None, None
            try:
                answer = await call(case)
            except ApiError as exc:
                error = exc
            except Exception as exc:  # a bad reference or mock in the test itself
                return Result(case, "error", (str(exc),), time.perf_counter() - start)
            failures = check(case, answer, error)
            return Result(case, "failed" if failures else "passed", tuple(failures), time.perf_counter() - start, answer)

    return list(await asyncio.gather(*(one(c) for c in cases)))


# --- reporting (pure) -----------------------------------------------------------------------


def report(results: list[Result]) -> str:
    lines = []
    for r in results:
        mark = {"passed": "PASS", "failed": "FAIL", "error": "ERROR"}[r.status]
        lines.append(f"{mark}  {r.case.id}  ({r.case.tool}, {r.seconds * 1000:.0f} ms)")
        lines += [f"      {m}" for m in r.messages]
    counts = {s: sum(1 for r in results if r.status == s) for s in ("passed", "failed", "error")}
    lines.append("")
    lines.append(f"{len(results)} tests: {counts['passed']} passed, {counts['failed']} failed, {counts['error']} errors")
    return "\n".join(lines) + "\n"


def results_json(results: list[Result]) -> dict[str, Any]:
    """--format json: counts and one entry per test, with the answer the tool gave."""
    counts = {s: sum(1 for r in results if r.status == s) for s in ("passed", "failed", "error")}
    return {
        "counts": counts,
        "tests": [
            {
                "file": r.case.file,
                "line": r.case.line,
                "name": r.case.name,
                "tool": r.case.tool,
                "format": r.case.style,
                "status": r.status,
                "messages": list(r.messages),
                "seconds": round(r.seconds, 4),
                "answer": r.answer,
            }
            for r in results
        ],
    }


def junit_xml(results: list[Result], suite: str = "cesync") -> str:
    """JUnit XML as CI systems read it: one testsuite per test file."""
    root = ET.Element("testsuites", name=suite)
    by_file: dict[str, list[Result]] = {}
    for r in results:
        by_file.setdefault(r.case.file, []).append(r)
    for file, items in by_file.items():
        node = ET.SubElement(
            root,
            "testsuite",
            name=file,
            tests=str(len(items)),
            failures=str(sum(r.status == "failed" for r in items)),
            errors=str(sum(r.status == "error" for r in items)),
            time=f"{sum(r.seconds for r in items):.3f}",
        )
        for r in items:
            case = ET.SubElement(
                node, "testcase", name=r.case.name, classname=file.removesuffix(".yaml"), time=f"{r.seconds:.3f}", file=file
            )
            case.set("line", str(r.case.line))
            if r.status != "passed":
                tag = "failure" if r.status == "failed" else "error"
                ET.SubElement(case, tag, message=r.messages[0] if r.messages else r.status).text = "\n".join(r.messages)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
