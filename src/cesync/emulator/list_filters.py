"""List filters (AIP-160) as each list the emulator serves documents them; lists.py says which list
takes which. The sources (Google's discovery documents ces.v1.json and ces.v1beta.json, revision
20261016, in google-api-python-client 2.202.0, and the google-cloud-ces 0.7.2 request messages,
which say the same):

* ListChangelogs ``filter``: "can be used to filter by ``action``, ``resource_type``,
  ``resource_name``, ``author``, and ``create_time``. The ``:`` comparator can be used for
  case-insensitive partial matching on string fields, while ``=`` performs an exact case-sensitive
  match" (examples ``action:update``, ``action="Create"``, ``create_time > "2025-01-01T00:00:00Z"``).
* ListEvaluationsRequest.evaluation_filter: "Supported fields: evaluation_datasets";
  evaluation_run_filter: "Supported fields: create_time, initiated_by, app_version_display_name"
  (the source is silent on how an evaluation with several runs matches: here, when any of its runs
  does); ``filter`` is "Deprecated: Use evaluation_filter and evaluation_run_filter instead" and says
  nothing of what it takes: refused unless empty.
* ListScheduledEvaluationRunsRequest.filter: "Currently supports filtering by:
  request.evaluations:evaluation_id, request.evaluation_dataset:evaluation_dataset_id".
* ListTools ``filter``: 'Use "include_system_tools=true" to include system tools'.
* The other lists (apps, every collection of an app, the other v1beta kinds) say only "Filter to be
  applied when listing the X. See https://google.aip.dev/160": which fields they take is not
  documented. AIP-160 filters on the resource's own fields; the emulator takes ``display_name``,
  ``name``, ``create_time`` and ``update_time`` (the fields every one of these resources has) with
  the changelogs' documented meaning of ``:`` and ``=``, and refuses any other field.
* ListOperations (google.longrunning) ``filter`` is "The standard list filter": the emulator takes
  ``done`` and ``name`` (the sources name no field).

The grammar is AIP-160's conjunctions: terms ``FIELD OP VALUE`` joined by ``AND``, a value bare or
in double quotes; OR, NOT and parentheses are refused. ``:`` on a string is the changelogs'
case-insensitive partial match; on a resource-name field (the evaluations' datasets, what a
scheduled run runs) a value matches the full name or, as the scheduled runs' filter says
(``evaluation_id``), its last segment. Times compare as RFC 3339 instants.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .errors import RpcError

__all__ = [
    "CHANGELOG_FIELDS",
    "EVALUATION_FIELDS",
    "OPERATION_FIELDS",
    "RESOURCE_FIELDS",
    "RUN_FIELDS",
    "SCHEDULED_FIELDS",
    "Field",
    "Keep",
    "Runs",
    "by_runs",
    "checked",
    "is_time",
    "keep",
    "system_switch",
    "time_of",
    "values",
]

Keep = Callable[[Mapping[str, Any]], bool]  # a resource as stored -> whether the list holds it
Runs = Callable[[str], Mapping[str, Any] | None]  # an evaluation run's name -> the run, if the emulator has it

_TERM = re.compile(r'\s*([a-z_.]+)\s*(!=|<=|>=|=|<|>|:)\s*("(?:[^"\\]|\\.)*"|[^\s"()]+)\s*')
_AND = re.compile(r"\s+AND\s+")
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


@dataclass(frozen=True)
class Term:
    field: str
    op: str
    value: str


def parse(text: str, what: str) -> list[Term]:
    """The terms of an AIP-160 conjunction; INVALID_ARGUMENT for what else the grammar has."""
    terms = []
    for part in _AND.split(text.strip()):
        m = _TERM.fullmatch(part)
        if not m:
            raise RpcError(
                "INVALID_ARGUMENT",
                f"invalid {what} {text!r}: the emulator takes terms FIELD OP VALUE joined by AND (AIP-160), not {part!r}",
            )
        value = m.group(3)
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        terms.append(Term(m.group(1), m.group(2), value))
    return terms


_RFC3339 = re.compile(r"(\d{4}-\d\d-\d\d)[Tt](\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?([Zz]|[+-]\d\d:\d\d)")


def time_of(value: str, where: str) -> datetime:
    """An RFC 3339 time (as proto3 JSON prints a Timestamp: up to nine fractional digits), read the same
    on every Python the project supports (3.10's fromisoformat takes only three or six digits)."""
    m = _RFC3339.fullmatch(value.strip())
    try:
        if m is None:
            raise ValueError(value)
        day, clock, fraction, offset = m.groups()
        micros = (fraction or "").ljust(6, "0")[:6]
        return datetime.fromisoformat(f"{day}T{clock}.{micros}{'+00:00' if offset in 'Zz' else offset}")
    except ValueError:
        raise RpcError("INVALID_ARGUMENT", f"invalid {where}: {value!r} is not an RFC 3339 time") from None


def values(data: Mapping[str, Any], path: str) -> list[str]:
    """The strings at a dotted JSON path of a resource (a list's items each)."""
    node: Any = data
    for step in path.split("."):
        node = node.get(step) if isinstance(node, Mapping) else None
    items = node if isinstance(node, list) else [node]
    return [str(v).lower() if isinstance(v, bool) else str(v) for v in items if v is not None]


# --- fields a filter may name ----------------------------------------------------------------------

TEXT, EXACT, TIME, NAME, BOOL = "text", "exact", "time", "name", "bool"
_OPS = {
    TEXT: (":", "=", "!="),  # ListChangelogs: ':' case-insensitive partial, '=' exact
    EXACT: ("=", "!=", ":"),  # ListEvaluations' run fields: the sources give no partial match
    TIME: tuple(_COMPARE),
    NAME: (":",),
    BOOL: ("=", "!="),
}


@dataclass(frozen=True)
class Field:
    kind: str
    path: str  # the dotted JSON path it reads
    names: str = ""  # NAME: the collection its values name (a value may be the id alone)
    ops: tuple[str, ...] = ()  # the operators it takes, when not its kind's

    @property
    def operators(self) -> tuple[str, ...]:
        return self.ops or _OPS[self.kind]


def _matches(term: Term, spec: Field, values: list[str]) -> bool:
    if spec.kind == TIME:
        wanted = time_of(term.value, term.field)
        return any(_COMPARE[term.op](time_of(v, term.field), wanted) for v in values if is_time(v))
    if spec.kind == NAME:
        return any(v == term.value or v.endswith(f"/{spec.names}/{term.value}") for v in values)
    if spec.kind == BOOL:
        return (term.value.lower() in values) == (term.op == "=")
    if term.op == "!=":
        return term.value not in values
    if term.op == ":" and spec.kind == TEXT:
        return any(term.value.lower() in v.lower() for v in values)
    return term.value in values


def is_time(value: str) -> bool:
    try:
        time_of(value, "")
    except RpcError:
        return False
    return True


RESOURCE_FIELDS = {
    "display_name": Field(TEXT, "displayName"),
    "name": Field(TEXT, "name"),
    "create_time": Field(TIME, "createTime"),
    "update_time": Field(TIME, "updateTime"),
}
CHANGELOG_FIELDS = {
    "action": Field(TEXT, "action"),
    "resource_type": Field(TEXT, "resourceType"),
    "resource_name": Field(TEXT, "resource"),
    "author": Field(TEXT, "author"),
    "create_time": Field(TIME, "createTime"),
}
OPERATION_FIELDS = {"done": Field(BOOL, "done"), "name": Field(TEXT, "name")}
EVALUATION_FIELDS = {"evaluation_datasets": Field(NAME, "evaluationDatasets", "evaluationDatasets")}
RUN_FIELDS = {
    "create_time": Field(TIME, "createTime"),
    "initiated_by": Field(EXACT, "initiatedBy"),
    "app_version_display_name": Field(EXACT, "appVersionDisplayName"),
}
SCHEDULED_FIELDS = {
    "request.evaluations": Field(NAME, "request.evaluations", "evaluations"),
    "request.evaluation_dataset": Field(NAME, "request.evaluationDataset", "evaluationDatasets"),
}


def checked(text: str, what: str, fields: Mapping[str, Field]) -> list[tuple[Term, Field]]:
    out = []
    for term in parse(text, what):
        spec = fields.get(term.field)
        if spec is None:
            raise RpcError("INVALID_ARGUMENT", f"unsupported field {term.field!r} in {what}: supported are {', '.join(fields)}")
        if term.op not in spec.operators:
            raise RpcError(
                "INVALID_ARGUMENT",
                f"unsupported operator {term.op!r} on {term.field} in {what}: use {' or '.join(spec.operators)}",
            )
        if spec.kind == TIME:
            time_of(term.value, f"{what} {term.field}")
        if spec.kind == BOOL and term.value.lower() not in ("true", "false"):
            raise RpcError("INVALID_ARGUMENT", f"invalid {what} {term.field}: {term.value!r} is not true or false")
        out.append((term, spec))
    return out


def keep(terms: list[tuple[Term, Field]]) -> Keep:
    return lambda data: all(_matches(t, s, values(data, s.path)) for t, s in terms)


def system_switch(text: str, param: str) -> tuple[str, bool]:
    """ListTools' filter without its include_system_tools term, and what that term said."""
    terms = parse(text, param)
    switch = [t for t in terms if t.field == "include_system_tools"]
    rest = [t for t in terms if t.field != "include_system_tools"]
    if len(switch) > 1 or any(t.op != "=" or t.value.lower() not in ("true", "false") for t in switch):
        raise RpcError("INVALID_ARGUMENT", f"invalid {param} {text!r}: include_system_tools=true or include_system_tools=false")
    quoted = " AND ".join(f'{t.field} {t.op} "{_escaped(t.value)}"' for t in rest)
    return quoted, bool(switch) and switch[0].value.lower() == "true"


def _escaped(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def by_runs(keep: Keep, runs: Runs) -> Keep:
    def keeps(data: Mapping[str, Any]) -> bool:
        found = [r for r in (runs(str(n)) for n in data.get("evaluationRuns") or []) if r is not None]
        return any(keep(r) for r in found)

    return keeps
