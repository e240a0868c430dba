"""Expectations of a Python tool's answer written outside ``result``: validate's warnings.

CES answers a Python tool's call with ``{"result": <what the function returned>}`` (SPEC 14;
cxas-scrapi: "Response paths MUST start with `$.result.`"), and a golden's
``toolResponse.response`` holds the same shape. An expectation written as the function's
own return value (``response: {eligible: true}``) can never match: the test or golden
fails on every run, with a message about a missing key. Said once, where it is written.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..core.yamlfile import Path_
from ..errors import Problem
from .credentials import WARNING
from .loading import SourceFile

if TYPE_CHECKING:  # validate of a repo without tests loads no test module
    from ..tooltests.schema import Case

__all__ = ["ANSWER_KEYS", "python_answer_warnings", "python_tools"]

# The top-level keys of a Python tool's answer: its return value, or the error it raised.
ANSWER_KEYS = frozenset({"result", "error"})


def python_tools(files: list[SourceFile]) -> set[str]:
    """Every name a Python tool of the repo goes by: its id, its function's name, its display name."""
    names: set[str] = set()
    for src in files:
        data = src.doc.data if isinstance(src.doc.data, dict) else {}
        function = data.get("pythonFunction")
        if not src.kind.named_by_type or not isinstance(function, dict):  # a tool: its type holds the function
            continue
        names |= {n for n in (src.id, function.get("name"), data.get("displayName")) if isinstance(n, str) and n}
    return names


def python_answer_warnings(files: list[SourceFile], cases: list[Case]) -> list[Problem]:
    """A warning for each golden and tool test of a Python tool that expects an answer outside ``result``."""
    tools = python_tools(files)
    if not tools:
        return []
    found: list[Problem] = []
    for src in files:
        if not src.kind.run_by_eval:  # an evaluation: its golden expects the answers
            continue
        for at, tool, response in _golden_responses(src.doc.data, ()):
            stray = _stray(response)
            if tool in tools and stray:
                found.append(src.doc.problem((*at, "response"), _said(tool, stray, "response: {result: ...}"), key=True))
    for case in cases:
        if case.tool not in tools:
            continue
        stray = _stray(case.response) if case.response is not None else []
        stray += [c.path for c in case.checks if not _under_answer(c.path)]
        if stray:
            wanted = "response: {result: ...}" if case.style == "cesync" else "paths that start with $.result."
            found.append(Problem(case.file, case.line, 1, _said(case.tool, stray, wanted)))
    return found


def _said(tool: str, stray: list[str], wanted: str) -> str:
    return (
        f"{WARNING}expects Python tool '{tool}' to answer {', '.join(stray)} outside 'result': CES answers a Python "
        f'tool with {{"result": <its return value>}}, so this can never match; write {wanted}'
    )


def _stray(response: Any) -> list[str]:
    """The top-level keys of an expected response that no Python tool's answer has."""
    return sorted(str(k) for k in response if k not in ANSWER_KEYS) if isinstance(response, dict) else []


def _under_answer(path: str) -> bool:
    """A cxas-scrapi JSONPath into the answer: ``$.result...`` or ``$.error...``."""
    head = path.removeprefix("$").lstrip(".")
    return any(head == k or head.startswith((f"{k}.", f"{k}[")) for k in ANSWER_KEYS) or head in ("", "*")


def _golden_responses(data: Any, at: Path_) -> Iterator[tuple[Path_, str, Any]]:
    """(path of the toolResponse, the tool's id or name, the expected response) in an evaluation's data."""
    if isinstance(data, dict):
        expected = data.get("toolResponse")
        if isinstance(expected, dict) and "response" in expected:
            tool = expected.get("tool")
            if isinstance(tool, dict) and isinstance(tool.get("ref"), str):
                tool = tool["ref"].rpartition("/")[2]
            if isinstance(tool, str):
                yield (*at, "toolResponse"), tool.rpartition("/")[2], expected["response"]
        for key, value in data.items():
            yield from _golden_responses(value, (*at, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _golden_responses(value, (*at, i))
