"""What every list the emulator serves takes: its ``filter`` fields (lists.py), ``orderBy``
(AIP-132), its other query parameters, paging, and its order when none is asked for. A parameter the
emulator cannot honour is INVALID_ARGUMENT, never ignored; which parameters a method has is the API
description's (methods.py). The sources (Google's discovery documents ces.v1.json and
ces.v1beta.json, revision 20261016, in google-api-python-client 2.202.0):

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
* ListEvaluations ``lastTenResults``: "Whether to include the last 10 evaluation results for each
  evaluation in the response".
* ListOperations ``returnPartialSuccess`` "will result in an UNIMPLEMENTED error if set unless
  explicitly documented otherwise": CES documents nothing, so true is UNIMPLEMENTED. It has no
  ``orderBy``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import RpcError
from .list_filters import (
    CHANGELOG_FIELDS,
    EVALUATION_FIELDS,
    OPERATION_FIELDS,
    RESOURCE_FIELDS,
    RUN_FIELDS,
    SCHEDULED_FIELDS,
    Field,
    Keep,
    Runs,
    by_runs,
    checked,
    is_time,
    keep,
    system_switch,
    time_of,
    values,
)
from .methods import query_parameters

__all__ = ["LISTS", "SPECS", "ListSpec", "Listing", "handled", "listing", "paged", "spec_of"]

_SYSTEM_PARAMS = frozenset(
    # Google's standard query parameters, taken by every method of every discovery document
    # ("parameters" at the document's top: $.xgafv, access_token, alt, callback, fields, key,
    # oauth_token, prettyPrint, quotaUser, upload_protocol, uploadType), and $alt, which the
    # GAPIC REST transports send for the enum encoding.
    {"$.xgafv", "access_token", "alt", "callback", "fields", "key", "oauth_token", "prettyPrint", "quotaUser"}
    | {"upload_protocol", "uploadType", "$alt"}
)


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
        found = values(data, spec.path)
        raw = found[0] if found else ""
    if spec.time:
        return time_of(raw, "").timestamp() if raw and is_time(raw) else None
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
    "apps": ListSpec("ListApps", f"{_ID}apps.list", {"filter": RESOURCE_FIELDS}, _V1_ORDERS, "name"),
    "changelogs": ListSpec("ListChangelogs", f"{_ID}apps.changelogs.list", {"filter": CHANGELOG_FIELDS}, _V1_ORDERS, "name"),
    "operations": ListSpec(
        "ListOperations",
        f"{_ID}operations.list",
        {"filter": OPERATION_FIELDS},
        None,
        "name",
        frozenset({"returnPartialSuccess"}),
    ),
    **{
        c: ListSpec(
            f"List{c[0].upper()}{c[1:]}" if c != "versions" else "ListAppVersions",
            f"{_ID}apps.{c}.list",
            # ListDeployments has no filter (ces.v1.json: orderBy, pageSize, pageToken only)
            {} if c == "deployments" else {"filter": RESOURCE_FIELDS},
            _V1_ORDERS,
            "name",
            system_switch=c == "tools",
        )
        for c in _V1_LISTS
    },
    "evaluations": ListSpec(
        "ListEvaluations",
        f"{_ID}apps.evaluations.list",
        {"evaluationFilter": EVALUATION_FIELDS, "evaluationRunFilter": RUN_FIELDS, "filter": {}},
        _BETA_ORDERS,
        "update_time",
        frozenset({"lastTenResults"}),
    ),
    "evaluationDatasets": ListSpec(
        "ListEvaluationDatasets", f"{_ID}apps.evaluationDatasets.list", {"filter": RESOURCE_FIELDS}, _BETA_ORDERS, "update_time"
    ),
    "evaluationExpectations": ListSpec(
        "ListEvaluationExpectations",
        f"{_ID}apps.evaluationExpectations.list",
        {"filter": RESOURCE_FIELDS},
        _BETA_ORDERS,
        "update_time",
    ),
    "scheduledEvaluationRuns": ListSpec(
        "ListScheduledEvaluationRuns",
        f"{_ID}apps.scheduledEvaluationRuns.list",
        {"filter": SCHEDULED_FIELDS},
        _SCHEDULED_ORDERS,
        "update_time",
    ),
    "evaluationRuns": ListSpec(
        "ListEvaluationRuns", f"{_ID}apps.evaluationRuns.list", {"filter": RESOURCE_FIELDS}, _NO_UPDATE_ORDERS, "update_time"
    ),
    "evaluationResults": ListSpec(
        "ListEvaluationResults",
        f"{_ID}apps.evaluations.results.list",
        {"filter": RESOURCE_FIELDS},
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
    return ListSpec(method, f"{_ID}apps.{collection}.list", {"filter": RESOURCE_FIELDS}, _V1_ORDERS, "name")


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
            text, system_tools = system_switch(text, param)
            if not text:
                continue
        terms = checked(text, param, fields)
        if param == "evaluationRunFilter":
            checks.append(by_runs(keep(terms), runs))
        else:
            checks.append(keep(terms))
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


def paged(items: Sequence[Any], offset: int, size: int) -> tuple[list[Any], int | None]:
    """One page of items, and the offset of the next (None: the last page)."""
    return list(items[offset : offset + size]), (offset + size if offset + size < len(items) else None)
