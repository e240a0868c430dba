"""The list filters the v1beta evaluation kinds document, and only those (google-cloud-ces ``ces_v1beta``
types/evaluation_service.py):

* ListEvaluationsRequest.evaluation_filter (``evaluationFilter``): "Filter to be applied on the
  evaluation when listing the evaluations. [...] Supported fields: evaluation_datasets".
* ListEvaluationsRequest.evaluation_run_filter (``evaluationRunFilter``): "Filter string for fields
  on the associated EvaluationRun resources. [...] Supported fields: create_time, initiated_by,
  app_version_display_name". The source is silent on how an evaluation with several runs
  matches: here, when any of its runs (``Evaluation.evaluation_runs``) does.
* ListEvaluationsRequest.filter is "Deprecated: Use evaluation_filter and evaluation_run_filter
  instead", and says nothing of what it takes: the emulator refuses one that is not empty.
* ListScheduledEvaluationRunsRequest.filter: "Currently supports filtering by:
  request.evaluations:evaluation_id, request.evaluation_dataset:evaluation_dataset_id".

The grammar is AIP-160's (the docstrings point to it), the part these fields need: terms
``FIELD OP VALUE`` joined by ``AND``, a value bare or in double quotes; ``:`` (has) on the
repeated and name fields, ``=`` and ``!=`` on the strings, and ``<``, ``<=``, ``>``, ``>=`` too on
create_time (an RFC 3339 time). A resource name field matches a value that is its full name or,
as the scheduled runs' filter says (``evaluation_id``), its last segment; the sources are silent
on which of the two evaluation_datasets takes, so it takes both. The other v1beta lists
(datasets, expectations, runs, results) document no field: only an empty filter is taken.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .errors import RpcError

__all__ = ["Keep", "keep_of"]

Keep = Callable[[dict[str, Any]], bool]  # a resource as stored -> whether the list holds it
Runs = Callable[[str], Mapping[str, Any] | None]  # an evaluation run's name -> the run, if the emulator has it

_TERM = re.compile(r'\s*([a-z_.]+)\s*(!=|<=|>=|=|<|>|:)\s*("(?:[^"\\]|\\.)*"|[^\s"()]+)\s*')
_AND = re.compile(r"\s+AND\s+")
_TIME_OPS = {
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


def _names(value: str, wanted: str, collection: str) -> bool:
    """A resource name field matching a value: the full name, or its id."""
    return wanted == value or value.endswith(f"/{collection}/{wanted}")


def _time(value: str, where: str) -> datetime:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise RpcError("INVALID_ARGUMENT", f"invalid {where}: {value!r} is not an RFC 3339 time") from None


def _refused(term: Term, what: str, fields: Mapping[str, tuple[str, ...]]) -> RpcError:
    if term.field not in fields:
        return RpcError("INVALID_ARGUMENT", f"unsupported field {term.field!r} in {what}: supported are {', '.join(fields)}")
    return RpcError(
        "INVALID_ARGUMENT", f"unsupported operator {term.op!r} on {term.field} in {what}: use {' or '.join(fields[term.field])}"
    )


# field -> the operators it takes, per filter
_EVALUATION = {"evaluation_datasets": (":",)}
_RUN = {"create_time": tuple(_TIME_OPS), "initiated_by": ("=", "!=", ":"), "app_version_display_name": ("=", "!=", ":")}
_SCHEDULED = {"request.evaluations": (":",), "request.evaluation_dataset": (":",)}


def _checked(text: str, what: str, fields: Mapping[str, tuple[str, ...]]) -> list[Term]:
    terms = parse(text, what)
    for term in terms:
        if term.op not in fields.get(term.field, ()):
            raise _refused(term, what, fields)
        if term.field == "create_time":
            _time(term.value, f"{what} create_time")
    return terms


def _evaluation_keeps(term: Term, data: Mapping[str, Any]) -> bool:
    return any(_names(str(n), term.value, "evaluationDatasets") for n in data.get("evaluationDatasets") or [])


def _run_keeps(term: Term, run: Mapping[str, Any]) -> bool:
    if term.field == "create_time":
        return bool(_TIME_OPS[term.op](_time(str(run.get("createTime", "")), "run createTime"), _time(term.value, "")))
    said = str(run.get({"initiated_by": "initiatedBy"}.get(term.field, "appVersionDisplayName"), ""))
    return (said != term.value) if term.op == "!=" else (said == term.value)


def _scheduled_keeps(term: Term, data: Mapping[str, Any]) -> bool:
    request = data.get("request") or {}
    if term.field == "request.evaluations":
        return any(_names(str(n), term.value, "evaluations") for n in request.get("evaluations") or [])
    return _names(str(request.get("evaluationDataset", "")), term.value, "evaluationDatasets")


def keep_of(collection: str, query: Mapping[str, str], runs: Runs) -> Keep | None:
    """What a v1beta list of collection keeps, as its query's filters say; None: everything."""
    flt = (query.get("filter") or "").strip()
    if collection == "evaluations":
        if flt:
            raise RpcError(
                "INVALID_ARGUMENT",
                "filter is deprecated on ListEvaluations (ListEvaluationsRequest.filter): use evaluationFilter "
                "(evaluation_datasets) or evaluationRunFilter (create_time, initiated_by, app_version_display_name)",
            )
        mine = (
            _checked(query.get("evaluationFilter") or "", "evaluationFilter", _EVALUATION)
            if query.get("evaluationFilter")
            else []
        )
        theirs = (
            _checked(query.get("evaluationRunFilter") or "", "evaluationRunFilter", _RUN)
            if query.get("evaluationRunFilter")
            else []
        )
        if not mine and not theirs:
            return None

        def keeps(data: dict[str, Any]) -> bool:
            if not all(_evaluation_keeps(t, data) for t in mine):
                return False
            if not theirs:
                return True
            found = [r for r in (runs(str(n)) for n in data.get("evaluationRuns") or []) if r is not None]
            return any(all(_run_keeps(t, r) for t in theirs) for r in found)

        return keeps
    if collection == "scheduledEvaluationRuns" and flt:
        terms = _checked(flt, "filter", _SCHEDULED)
        return lambda data: all(_scheduled_keeps(t, data) for t in terms)
    if flt:
        method = f"List{collection[0].upper()}{collection[1:]}"
        raise RpcError("INVALID_ARGUMENT", f"unsupported filter '{query.get('filter')}': {method} documents no fields for it")
    return None
