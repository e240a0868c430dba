"""What every list the emulator serves takes: ``filter`` (AIP-160), ``orderBy`` (AIP-132), the list's
other query parameters, and its order when none is asked for. A parameter the emulator cannot
honour is INVALID_ARGUMENT, never ignored. The sources, per list (Google's discovery documents
ces.v1.json and ces.v1beta.json, revision 20261016, in google-api-python-client 2.202.0, and the
google-cloud-ces 0.7.2 request messages, which say the same):

* ListChangelogs ``filter``: "can be used to filter by ``action``, ``resource_type``,
  ``resource_name``, ``author``, and ``create_time``. The ``:`` comparator can be used for
  case-insensitive partial matching on string fields, while ``=`` performs an exact case-sensitive
  match" (examples ``action:update``, ``action="Create"``, ``create_time > "2025-01-01T00:00:00Z"``).
* ListEvaluationsRequest.evaluation_filter: "Supported fields: evaluation_datasets";
  evaluation_run_filter: "Supported fields: create_time, initiated_by, app_version_display_name"
  (the source is silent on how an evaluation with several runs matches: here, when any of its runs
  does); ``filter`` is "Deprecated: Use evaluation_filter and evaluation_run_filter instead" and says
  nothing of what it takes: refused unless empty. ``lastTenResults``: "Whether to include the last
  10 evaluation results for each evaluation in the response".
* ListScheduledEvaluationRunsRequest.filter: "Currently supports filtering by:
  request.evaluations:evaluation_id, request.evaluation_dataset:evaluation_dataset_id".
* ListTools ``filter``: 'Use "include_system_tools=true" to include system tools'.
* The other lists (apps, every collection of an app, the other v1beta kinds) say only "Filter to be
  applied when listing the X. See https://google.aip.dev/160": which fields they take is not
  documented. AIP-160 filters on the resource's own fields; the emulator takes ``display_name``,
  ``name``, ``create_time`` and ``update_time`` (the fields every one of these resources has) with
  the changelogs' documented meaning of ``:`` and ``=``, and refuses any other field.
* ListOperations (google.longrunning) ``filter`` is "The standard list filter": the emulator takes
  ``done`` and ``name``. Its ``returnPartialSuccess`` "will result in an UNIMPLEMENTED error if set
  unless explicitly documented otherwise": CES documents nothing, so true is UNIMPLEMENTED. It has
  no ``orderBy``.
* ``orderBy`` of the v1 lists: 'Only "name" and "create_time" is supported' (AIP-132: ascending,
  or descending with a " desc" suffix, fields separated by commas). Their order when none is asked
  for is not documented: the emulator lists by name (a changelog's id grows with each write, so its
  changelogs come oldest first: a client that wants the newest first must say so).
* ``orderBy`` of the v1beta evaluation lists: 'Only "name" and "create_time", and "update_time"
  are supported. Time fields are ordered in descending order, and the name field is ordered in
  ascending order. If not included, "update_time" will be the default'; the scheduled runs add
  "next_scheduled_execution" (ascending) and "last_completed_run.create_time" (descending). A field
  with the other direction written out is refused: the documents give each field one. Runs and
  results have no ``updateTime`` field (EvaluationRun, EvaluationResult): their update time is their
  createTime, as no method changes them after the run.

The grammar is AIP-160's conjunctions: terms ``FIELD OP VALUE`` joined by ``AND``, a value bare or
in double quotes; OR, NOT and parentheses are refused. ``:`` on a string is the changelogs'
case-insensitive partial match; on a resource-name field (the evaluations' datasets, what a
scheduled run runs) a value matches the full name or, as the scheduled runs' filter says
(``evaluation_id``), its last segment. Times compare as RFC 3339 instants.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .errors import RpcError
from .methods import query_parameters

__all__ = ["LISTS", "SPECS", "Keep", "ListSpec", "Listing", "handled", "listing", "paged", "spec_of"]

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
_SYSTEM_PARAMS = frozenset(
    # Google's standard query parameters, taken by every method of every discovery document
    # ("parameters" at the document's top: $.xgafv, access_token, alt, callback, fields, key,
    # oauth_token, prettyPrint, quotaUser, upload_protocol, uploadType), and $alt, which the
    # GAPIC REST transports send for the enum encoding.
    {"$.xgafv", "access_token", "alt", "callback", "fields", "key", "oauth_token", "prettyPrint", "quotaUser"}
    | {"upload_protocol", "uploadType", "$alt"}
)


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


def _time(value: str, where: str) -> datetime:
    try:
        found = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise RpcError("INVALID_ARGUMENT", f"invalid {where}: {value!r} is not an RFC 3339 time") from None
    if found.tzinfo is None:
        raise RpcError("INVALID_ARGUMENT", f"invalid {where}: {value!r} has no time zone (RFC 3339: Z or an offset)")
    return found


def _values(data: Mapping[str, Any], path: str) -> list[str]:
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
        wanted = _time(term.value, term.field)
        return any(_COMPARE[term.op](_time(v, term.field), wanted) for v in values if _is_time(v))
    if spec.kind == NAME:
        return any(v == term.value or v.endswith(f"/{spec.names}/{term.value}") for v in values)
    if spec.kind == BOOL:
        return (term.value.lower() in values) == (term.op == "=")
    if term.op == "!=":
        return term.value not in values
    if term.op == ":" and spec.kind == TEXT:
        return any(term.value.lower() in v.lower() for v in values)
    return term.value in values


def _is_time(value: str) -> bool:
    try:
        _time(value, "")
    except RpcError:
        return False
    return True


_RESOURCE_FIELDS = {
    "display_name": Field(TEXT, "displayName"),
    "name": Field(TEXT, "name"),
    "create_time": Field(TIME, "createTime"),
    "update_time": Field(TIME, "updateTime"),
}
_CHANGELOG_FIELDS = {
    "action": Field(TEXT, "action"),
    "resource_type": Field(TEXT, "resourceType"),
    "resource_name": Field(TEXT, "resource"),
    "author": Field(TEXT, "author"),
    "create_time": Field(TIME, "createTime"),
}
_OPERATION_FIELDS = {"done": Field(BOOL, "done"), "name": Field(TEXT, "name")}
_EVALUATION_FIELDS = {"evaluation_datasets": Field(NAME, "evaluationDatasets", "evaluationDatasets")}
_RUN_FIELDS = {
    "create_time": Field(TIME, "createTime"),
    "initiated_by": Field(EXACT, "initiatedBy"),
    "app_version_display_name": Field(EXACT, "appVersionDisplayName"),
}
_SCHEDULED_FIELDS = {
    "request.evaluations": Field(NAME, "request.evaluations", "evaluations"),
    "request.evaluation_dataset": Field(NAME, "request.evaluationDataset", "evaluationDatasets"),
}


def _checked(text: str, what: str, fields: Mapping[str, Field]) -> list[tuple[Term, Field]]:
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
            _time(term.value, f"{what} {term.field}")
        if spec.kind == BOOL and term.value.lower() not in ("true", "false"):
            raise RpcError("INVALID_ARGUMENT", f"invalid {what} {term.field}: {term.value!r} is not true or false")
        out.append((term, spec))
    return out


def _keep(terms: list[tuple[Term, Field]]) -> Keep:
    return lambda data: all(_matches(t, s, _values(data, s.path)) for t, s in terms)


# --- orders ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Order:
    path: str  # the dotted JSON path it reads; "runs:" + a path: the createTime of the run named there
    time: bool = False
    direction: str = ""  # "asc" or "desc": the only one the list's document gives it; "": either, asc by default


_V1_ORDERS = {"name": Order("name"), "create_time": Order("createTime", time=True)}
_BETA_ORDERS = {
    "name": Order("name", direction="asc"),
    "create_time": Order("createTime", time=True, direction="desc"),
    "update_time": Order("updateTime", time=True, direction="desc"),
}
_NO_UPDATE_ORDERS = {**_BETA_ORDERS, "update_time": Order("createTime", time=True, direction="desc")}
_SCHEDULED_ORDERS = {
    **_BETA_ORDERS,
    "next_scheduled_execution": Order("nextScheduledExecutionTime", time=True, direction="asc"),
    "last_completed_run.create_time": Order("runs:lastCompletedRun", time=True, direction="desc"),
}


def _order(text: str, orders: Mapping[str, Order]) -> list[tuple[Order, bool]]:
    """(order, descending) of each field of an AIP-132 orderBy."""
    out = []
    for part in text.split(","):
        words = part.split()
        if not words or len(words) > 2 or words[0] not in orders or (len(words) == 2 and words[1] not in ("asc", "desc")):
            raise RpcError("INVALID_ARGUMENT", f"unsupported orderBy {text!r}: supported are {', '.join(orders)}")
        spec = orders[words[0]]
        direction = words[1] if len(words) == 2 else (spec.direction or "asc")
        if spec.direction and direction != spec.direction:
            word = "descending" if spec.direction == "desc" else "ascending"
            raise RpcError("INVALID_ARGUMENT", f"unsupported orderBy {text!r}: this list orders {words[0]} {word} only")
        out.append((spec, direction == "desc"))
    return out


def _sort_value(data: Mapping[str, Any], spec: Order, runs: Runs) -> Any:
    if spec.path.startswith("runs:"):
        run = runs(str(data.get(spec.path[5:], "")))
        raw = str((run or {}).get("createTime", ""))
    else:
        found = _values(data, spec.path)
        raw = found[0] if found else ""
    if spec.time:
        return _time(raw, "").timestamp() if raw and _is_time(raw) else None
    return raw


def _arranged(
    rows: list[Any], data_of: Callable[[Any], Mapping[str, Any]], order: list[tuple[Order, bool]], runs: Runs
) -> list[Any]:
    """rows in order; the name breaks ties (in the direction of the last field); a missing value sorts last."""
    *_, (_, last_desc) = order
    keyed = sorted(rows, key=lambda r: str(data_of(r).get("name", "")), reverse=last_desc)
    for spec, desc in reversed(order):
        valued = [(_sort_value(data_of(r), spec, runs), r) for r in keyed]
        present = sorted((p for p in valued if p[0] is not None), key=lambda p: p[0], reverse=desc)
        keyed = [r for _, r in present] + [r for v, r in valued if v is None]
    return keyed


# --- lists -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ListSpec:
    method: str  # as messages name it (ListChangelogs)
    method_id: str  # the discovery id, which the API description keys its parameters by (methods.py)
    filters: Mapping[str, Mapping[str, Field]]  # query parameter -> the fields it may name
    orders: Mapping[str, Order] | None  # None: the method has no orderBy
    default: str  # the order when none is asked for
    params: frozenset[str] = frozenset()  # other query parameters it takes (beside pageSize, pageToken)
    system_switch: bool = False  # ListTools: include_system_tools=true|false in its filter


_ID = "ces.projects.locations."
_V1_LISTS = ("agents", "deployments", "examples", "guardrails", "tools", "toolsets", "versions")
SPECS: dict[str, ListSpec] = {
    "apps": ListSpec("ListApps", f"{_ID}apps.list", {"filter": _RESOURCE_FIELDS}, _V1_ORDERS, "name"),
    "changelogs": ListSpec("ListChangelogs", f"{_ID}apps.changelogs.list", {"filter": _CHANGELOG_FIELDS}, _V1_ORDERS, "name"),
    "operations": ListSpec(
        "ListOperations",
        f"{_ID}operations.list",
        {"filter": _OPERATION_FIELDS},
        None,
        "name",
        frozenset({"returnPartialSuccess"}),
    ),
    **{
        c: ListSpec(
            f"List{c[0].upper()}{c[1:]}" if c != "versions" else "ListAppVersions",
            f"{_ID}apps.{c}.list",
            # ListDeployments has no filter (ces.v1.json: orderBy, pageSize, pageToken only)
            {} if c == "deployments" else {"filter": _RESOURCE_FIELDS},
            _V1_ORDERS,
            "name",
            system_switch=c == "tools",
        )
        for c in _V1_LISTS
    },
    "evaluations": ListSpec(
        "ListEvaluations",
        f"{_ID}apps.evaluations.list",
        {"evaluationFilter": _EVALUATION_FIELDS, "evaluationRunFilter": _RUN_FIELDS, "filter": {}},
        _BETA_ORDERS,
        "update_time",
        frozenset({"lastTenResults"}),
    ),
    "evaluationDatasets": ListSpec(
        "ListEvaluationDatasets", f"{_ID}apps.evaluationDatasets.list", {"filter": _RESOURCE_FIELDS}, _BETA_ORDERS, "update_time"
    ),
    "evaluationExpectations": ListSpec(
        "ListEvaluationExpectations",
        f"{_ID}apps.evaluationExpectations.list",
        {"filter": _RESOURCE_FIELDS},
        _BETA_ORDERS,
        "update_time",
    ),
    "scheduledEvaluationRuns": ListSpec(
        "ListScheduledEvaluationRuns",
        f"{_ID}apps.scheduledEvaluationRuns.list",
        {"filter": _SCHEDULED_FIELDS},
        _SCHEDULED_ORDERS,
        "update_time",
    ),
    "evaluationRuns": ListSpec(
        "ListEvaluationRuns", f"{_ID}apps.evaluationRuns.list", {"filter": _RESOURCE_FIELDS}, _NO_UPDATE_ORDERS, "update_time"
    ),
    "evaluationResults": ListSpec(
        "ListEvaluationResults",
        f"{_ID}apps.evaluations.results.list",
        {"filter": _RESOURCE_FIELDS},
        _NO_UPDATE_ORDERS,
        "update_time",
    ),
}
LISTS = tuple(SPECS)


@dataclass(frozen=True)
class Listing:
    """What one list call asked for: what it keeps, in which order, and its page key."""

    keep: Keep | None  # None: every resource
    order: list[tuple[Order, bool]]
    key: str  # what a page token of this query is bound to
    system_tools: bool = False  # ListTools: with the system tools
    last_ten_results: bool = False
    runs: Runs = field(default=lambda _: None)

    @property
    def plain(self) -> tuple[str, bool] | None:
        """(column, descending) when the store can order it alone by name or createTime; None: in Python."""
        if self.keep is not None or len(self.order) != 1:
            return None
        spec, desc = self.order[0]
        return (spec.path, desc) if spec.path in ("name", "createTime") else None

    def arranged(self, rows: list[Any], data_of: Callable[[Any], Mapping[str, Any]]) -> list[Any]:
        kept = [r for r in rows if self.keep is None or self.keep(data_of(r))]
        return _arranged(kept, data_of, self.order, self.runs)


def _flag(query: Mapping[str, str], name: str) -> bool:
    raw = (query.get(name) or "false").strip().lower()
    if raw not in ("true", "false", "1", "0"):
        raise RpcError("INVALID_ARGUMENT", f"invalid {name} {query.get(name)!r}: true or false")
    return raw in ("true", "1")


def spec_of(collection: str) -> ListSpec:
    """The list's entry; a collection the table does not name (a kind added to resources.COLLECTIONS
    since) lists as the v1 collections whose documents name no filter fields do."""
    found = SPECS.get(collection)
    if found is not None:
        return found
    method = f"List{collection[0].upper()}{collection[1:]}"
    return ListSpec(method, f"{_ID}apps.{collection}.list", {"filter": _RESOURCE_FIELDS}, _V1_ORDERS, "name")


def handled(collection: str) -> frozenset[str]:
    """The query parameters a list honours (beside the system ones)."""
    spec = spec_of(collection)
    orders = ("orderBy",) if spec.orders is not None else ()
    return frozenset({"pageSize", "pageToken", *spec.filters, *spec.params, *orders})


def listing(collection: str, query: Mapping[str, str], runs: Runs = lambda _: None, version: str = "v1") -> Listing:
    """What a list of collection (or "apps", "operations", "evaluationRuns", "evaluationResults")
    was asked for; INVALID_ARGUMENT for a parameter it cannot honour."""
    spec = spec_of(collection)
    known = handled(collection)
    documented = query_parameters(version, spec.method_id) or known
    for name in query:
        if name in documented and name not in known:
            # a parameter a newer API description gives the method and this table does not take yet
            raise RpcError("INVALID_ARGUMENT", f"{name} is documented for {spec.method} but the emulator does not honour it")
        if name not in documented and name not in _SYSTEM_PARAMS:
            # Google's front ends refuse a query parameter the request message lacks in these words
            raise RpcError(
                "INVALID_ARGUMENT",
                f'Invalid JSON payload received. Unknown name "{name}": Cannot bind query parameter. '
                f"Field '{name}' could not be found in request message ({spec.method}).",
            )
    if _flag(query, "returnPartialSuccess") and "returnPartialSuccess" in spec.params:
        raise RpcError("UNIMPLEMENTED", "returnPartialSuccess is not supported by CES (ListOperationsRequest)")
    checks: list[Keep] = []
    system_tools = False
    for param, fields in spec.filters.items():
        text = (query.get(param) or "").strip()
        if not text:
            continue
        if not fields:
            raise RpcError(
                "INVALID_ARGUMENT",
                f"{param} is deprecated on {spec.method}: use evaluationFilter (evaluation_datasets) or "
                "evaluationRunFilter (create_time, initiated_by, app_version_display_name)",
            )
        if spec.system_switch:
            text, system_tools = _system_switch(text, param)
            if not text:
                continue
        terms = _checked(text, param, fields)
        if param == "evaluationRunFilter":
            checks.append(_by_runs(_keep(terms), runs))
        else:
            checks.append(_keep(terms))
    orders = spec.orders or {}
    raw_order = (query.get("orderBy") or "").strip() or spec.default
    order = _order(raw_order, orders) if spec.orders is not None else [(Order("name"), False)]
    key = "|".join([collection, *(query.get(p) or "" for p in sorted(spec.filters)), raw_order])
    return Listing(
        keep=(lambda data: all(c(data) for c in checks)) if checks else None,
        order=order,
        key=key,
        system_tools=system_tools,
        last_ten_results="lastTenResults" in spec.params and _flag(query, "lastTenResults"),
        runs=runs,
    )


def _system_switch(text: str, param: str) -> tuple[str, bool]:
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


def _by_runs(keep: Keep, runs: Runs) -> Keep:
    def keeps(data: Mapping[str, Any]) -> bool:
        found = [r for r in (runs(str(n)) for n in data.get("evaluationRuns") or []) if r is not None]
        return any(keep(r) for r in found)

    return keeps


def paged(items: Sequence[Any], offset: int, size: int) -> tuple[list[Any], int | None]:
    """One page of items, and the offset of the next (None: the last page)."""
    return list(items[offset : offset + size]), (offset + size if offset + size < len(items) else None)
