"""The evaluation kinds on the emulator: evaluations, evaluationDatasets, evaluationExpectations, scheduledEvaluationRuns.

Their CRUD is the generic one of every collection (app.py, over the v1beta messages of the
snapshot: resources.COLLECTIONS); what differs, each with its source (google-cloud-ces
``ces_v1beta`` types/evaluation.py and evaluation_service.py):

* They are served on ``/v1beta/`` only: ``google.cloud.ces.v1`` has no EvaluationService, so
  ``/v1/.../evaluations`` is an unknown path there (NOT_FOUND, as for any other).
* ``Evaluation.evaluation_datasets`` is output only, "List of evaluation datasets the evaluation
  belongs to": the server keeps it from the datasets' ``evaluations`` on every write of either.
* Deleting a tool, toolset or agent an evaluation names is not refused (DeleteToolRequest.force:
  "even if it is still referenced by agents/examples"; evaluations are not named) and leaves the
  evaluation invalid (``Evaluation.invalid``, output only: "This can happen if an evaluation is
  referencing a tool, toolset, or agent that has since been deleted"): the reference stays.
* A dataset that lists an evaluation holds its delete unless ``force`` (DeleteEvaluationRequest.force),
  which removes the evaluation from the datasets: resources.REFERRERS, as for the other kinds.
* Their lists take the filters the List*Request messages document (list_filters.py), not v1's.
"""

from __future__ import annotations

import json
from typing import Any

from .errors import RpcError
from .resources import COLLECTIONS, references
from .store import Store
from .wire import printed

__all__ = ["EVALUATION_COLLECTIONS", "after_delete", "after_write", "check_served"]

EVALUATION_COLLECTIONS = tuple(c.name for c in COLLECTIONS.values() if c.versions == ("v1beta",))
_INVALIDATED_BY = ("tools", "toolsets", "agents")


def check_served(collection: str, version: str, path: str) -> None:
    """NOT_FOUND for a collection the surface asked for does not have (the evaluations on /v1/)."""
    found = COLLECTIONS.get(collection)
    if found is not None and version not in found.versions:
        raise RpcError("NOT_FOUND", f"unknown resource '{path}': {collection} are served on /{found.versions[0]}/ only")


def after_write(store: Store, db: Any, parent: str, collection: str) -> None:
    """Keep every evaluation's evaluationDatasets after a write of an evaluation or a dataset."""
    if collection in ("evaluations", "evaluationDatasets"):
        _memberships(store, db, parent)


def after_delete(store: Store, db: Any, parent: str, collection: str, name: str) -> None:
    """What deleting ``name`` does to the evaluations: invalid when they name it, memberships kept."""
    if collection in _INVALIDATED_BY:
        for rid, data in store.all_data(db, parent, "evaluations").items():
            if not data.get("invalid") and any(n == name for _, n, _, _ in references(data, parent)):
                store.put(db, parent, "evaluations", rid, printed("evaluations", {**data, "invalid": True}))
    after_write(store, db, parent, collection)


def _memberships(store: Store, db: Any, parent: str) -> None:
    member_of: dict[str, list[str]] = {}
    for data in store.all_data(db, parent, "evaluationDatasets").values():
        for name in data.get("evaluations", []):
            member_of.setdefault(name, []).append(data["name"])
    for rid, data in store.all_data(db, parent, "evaluations").items():
        wanted = sorted(member_of.get(data["name"], []))
        if data.get("evaluationDatasets", []) != wanted:
            changed = json.loads(json.dumps(data))
            changed.pop("evaluationDatasets", None)
            if wanted:
                changed["evaluationDatasets"] = wanted
            store.put(db, parent, "evaluations", rid, printed("evaluations", changed))
