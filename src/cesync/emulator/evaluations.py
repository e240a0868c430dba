"""Evaluation runs in the emulator (v1beta): ``apps:runEvaluation``, ``evaluationRuns`` and results.

``POST /v1beta/{app}:runEvaluation`` (RunEvaluationRequest: ``evaluations`` or
``evaluationDataset``, ``runCount``, ``displayName``) replays each evaluation ``runCount``
times (v1beta's default: 1 per golden, 5 per scenario) and answers a long-running
operation (``RunEvaluationOperationMetadata``; its response a ``RunEvaluationResponse``
naming the run). Until the operation is done the run is RUNNING with its ``progress``
counting nothing completed, and its results are not listed; when it is done the run is
COMPLETED with ``progress``, ``evaluationRunSummaries`` and ``evaluationResults``, each
result an ``EvaluationResult`` (see golden.py for what is judged and how) under
``{evaluation}/results/{id}``, and each evaluation carries ``evaluationRuns``,
``lastCompletedResult`` and ``aggregatedMetrics`` (pass and fail counts and tool metrics
for the draft, app version id "-"). Field names and enums are v1beta's
(google-cloud-ces ``types/evaluation.py``, ``types/evaluation_service.py``).

Scenario evaluations need a simulated user and a model: their results are SKIPPED unless a
test has set their outcome. ``/admin/evaluationOutcomes`` sets the outcome of what the
emulator cannot judge: ``{evaluation, turn, step, outcome[, explanation]}`` for a golden's
step, ``{evaluation, outcome}`` for a scenario, ``{evaluation, clear: true}`` to forget.

Runs and results live in the emulator process (its store keeps resources only), so a run
is read back from the process that ran it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format

from ..api import descriptors as api
from .errors import RpcError
from .golden import Decided, RunTool, replay_golden
from .store import Store, now
from .wire import printed as printed_resource

__all__ = ["EvaluationService"]

OUTCOMES = ("PASS", "FAIL", "SKIPPED", "OUTCOME_UNSPECIFIED")
MAX_RUN_COUNT = 100  # the emulator's own bound (v1beta states none): each run replays every tool call


@dataclass
class EvaluationService:
    store: Store
    run_tool: Callable[[str], RunTool]  # parent -> executeTool of that app
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    published: set[str] = field(default_factory=set)
    decided: dict[str, Decided] = field(default_factory=dict)
    scenario_decided: dict[str, tuple[str, str]] = field(default_factory=dict)

    def read(self, parent: str, collection: str, rid: str) -> dict[str, Any] | None:
        self.store.app(parent)
        with self.store.transaction() as db:
            found = self.store.get(db, parent, collection, rid)
        return found.data if found is not None else None

    # --- runEvaluation ----------------------------------------------------------------------

    def _evaluations(self, parent: str, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        names = body.get("evaluations") or []
        dataset = body.get("evaluationDataset")
        if names and dataset:
            raise RpcError("INVALID_ARGUMENT", "set evaluations or evaluationDataset, not both")
        if dataset:
            found = self._own(parent, str(dataset), "evaluationDatasets")
            names = found.get("evaluations") or []
            if not names:
                raise RpcError("FAILED_PRECONDITION", f"evaluation dataset {dataset} holds no evaluations")
        if not names:
            raise RpcError("INVALID_ARGUMENT", "name the evaluations to run (evaluations or evaluationDataset)")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise RpcError("INVALID_ARGUMENT", "evaluations must be a list of evaluation names")
        return [(n, self._own(parent, n, "evaluations")) for n in dict.fromkeys(names)]

    def _own(self, parent: str, name: str, collection: str) -> dict[str, Any]:
        prefix = f"{parent}/{collection}/"
        rid = name[len(prefix) :] if name.startswith(prefix) else ""
        if not rid or "/" in rid:
            raise RpcError("INVALID_ARGUMENT", f"{name!r} is not one of {parent}'s {collection}")
        found = self.read(parent, collection, rid)
        if found is None:
            raise RpcError("NOT_FOUND", f"{name} not found")
        return found

    async def start_run(self, parent: str, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """Replay the evaluations; (run name, RunEvaluationOperationMetadata). The run is RUNNING
        and its results unlisted until the operation settles (finish)."""
        evaluations = self._evaluations(parent, body)
        count = body.get("runCount")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_RUN_COUNT):
            raise RpcError("INVALID_ARGUMENT", f"runCount must be a whole number from 1 to {MAX_RUN_COUNT}")
        run = f"{parent}/evaluationRuns/{uuid.uuid4().hex[:12]}"
        created = now()
        names: list[str] = []
        for name, evaluation in evaluations:
            times = count or (5 if "scenario" in evaluation else 1)  # RunEvaluationRequest.run_count's default
            for _ in range(times):
                result = await self._result(parent, name, evaluation, run, created)
                self.results[result["name"]] = result
                names.append(result["name"])
        kinds = {"scenario" if "scenario" in e else "golden" for _, e in evaluations}
        self.runs[run] = {
            "name": run,
            "displayName": str(body.get("displayName") or f"{len(evaluations)} evaluations run - {created}"),
            "createTime": created,
            "initiatedBy": "emulator@localhost",
            "appVersion": str(body.get("appVersion") or f"{parent}/versions/-"),
            "evaluations": [n for n, _ in evaluations],
            **({"evaluationDataset": body["evaluationDataset"]} if body.get("evaluationDataset") else {}),
            "evaluationType": "MIXED" if len(kinds) > 1 else kinds.pop().upper(),
            "state": "RUNNING",
            "progress": {"totalCount": len(names)},
            "runCount": count or 1,
            "pending": names,
        }
        metadata = {"evaluations": [n for n, _ in evaluations], "evaluationRun": run, "createTime": created, "verb": "create"}
        return run, metadata

    async def _result(self, parent: str, name: str, evaluation: dict[str, Any], run: str, created: str) -> dict[str, Any]:
        result: dict[str, Any] = {
            "name": f"{name}/results/{uuid.uuid4().hex[:12]}",
            "displayName": f"{evaluation.get('displayName', name.rsplit('/', 1)[-1])} result - {created}",
            "createTime": created,
            "evaluationRun": run,
            "initiatedBy": "emulator@localhost",
            "appVersion": f"{parent}/versions/-",
            "executionState": "COMPLETED",
        }
        if "scenario" in evaluation:
            outcome, why = self.scenario_decided.get(name, ("SKIPPED", ""))
            note = f"{outcome} as set by the emulator's admin hook" + (f" ({why})" if why else "")
            if name not in self.scenario_decided:
                note = "not evaluated by the emulator: a scenario needs a simulated user and a model"
            task = str((evaluation["scenario"] or {}).get("task", ""))
            result["scenarioResult"] = {"conversation": note, "task": task}
            result["evaluationStatus"] = outcome
            return result
        status, golden = await replay_golden(evaluation.get("golden") or {}, self.run_tool(parent), self.decided.get(name, {}))
        result["goldenResult"] = golden
        result["evaluationStatus"] = status
        return result

    def finish(self, db: Any, run: str) -> dict[str, Any]:
        """The operation's action: the run COMPLETED, its results listed, the evaluations told."""
        record = self.runs.get(run)
        if record is None:
            raise RpcError("NOT_FOUND", f"evaluation run {run} not found")
        names = record.pop("pending", [])
        self.published.update(names)
        results = [self.results[n] for n in names]
        statuses = [r["evaluationStatus"] for r in results]
        record["state"] = "COMPLETED"
        record["evaluationResults"] = names
        record["progress"] = {
            "totalCount": len(names),
            "completedCount": len(names),
            "passedCount": statuses.count("PASS"),
            "failedCount": statuses.count("FAIL"),
        }
        summaries: dict[str, dict[str, int]] = {}
        for r in results:
            evaluation = r["name"].split("/results/", 1)[0]
            summary = summaries.setdefault(evaluation, {"passedCount": 0, "failedCount": 0, "errorCount": 0})
            key = {"PASS": "passedCount", "FAIL": "failedCount"}.get(r["evaluationStatus"])
            if key:
                summary[key] += 1
        record["evaluationRunSummaries"] = summaries
        for evaluation in summaries:
            self._tell(db, evaluation, run)
        return {"evaluationRun": run}

    def _tell(self, db: Any, evaluation: str, run: str) -> None:
        """Evaluation's output-only evaluationRuns, lastCompletedResult and aggregatedMetrics."""
        parent, rid = evaluation.split("/evaluations/", 1)
        found = self.store.get(db, parent, "evaluations", rid)
        if found is None:
            return  # deleted meanwhile
        stored = found.data
        mine = [r for n, r in self.results.items() if n in self.published and n.startswith(f"{evaluation}/results/")]
        runs = list(dict.fromkeys([*stored.get("evaluationRuns", []), run]))
        tools: dict[str, dict[str, int]] = {}
        for r in mine:
            for turn in (r.get("goldenResult") or {}).get("turnReplayResults", []):
                for o in turn.get("expectationOutcome", []):
                    call = (o.get("expectation") or {}).get("toolCall")
                    if call and o.get("outcome") in ("PASS", "FAIL"):
                        counts = tools.setdefault(
                            str(call.get("tool") or call.get("toolsetTool")), {"passCount": 0, "failCount": 0}
                        )
                        counts["passCount" if o["outcome"] == "PASS" else "failCount"] += 1
        metrics = {
            "appVersionId": "-",
            "passCount": sum(r["evaluationStatus"] == "PASS" for r in mine),
            "failCount": sum(r["evaluationStatus"] == "FAIL" for r in mine),
            "toolMetrics": [{"tool": t, **c} for t, c in sorted(tools.items())],
        }
        latest = max(mine, key=lambda r: r["createTime"]) if mine else None
        data = {**stored, "evaluationRuns": runs, "aggregatedMetrics": {"metricsByAppVersion": [metrics]}}
        if latest is not None:
            data["lastCompletedResult"] = latest
        self.store.put(db, parent, "evaluations", rid, printed_resource("evaluations", data))

    # --- reading runs and results --------------------------------------------------------------

    def run(self, name: str) -> dict[str, Any]:
        record = self.runs.get(name)
        if record is None:
            raise RpcError("NOT_FOUND", f"evaluation run {name} not found")
        return {k: v for k, v in record.items() if k != "pending"}

    def list_runs(self, parent: str) -> dict[str, Any]:
        mine = [self.run(n) for n in self.runs if n.startswith(f"{parent}/evaluationRuns/")]
        return {"evaluationRuns": sorted(mine, key=lambda r: str(r["createTime"]), reverse=True)}

    def delete_run(self, name: str) -> None:
        record = self.runs.pop(name, None)
        if record is None:
            raise RpcError("NOT_FOUND", f"evaluation run {name} not found")
        for result in record.get("evaluationResults", record.get("pending", [])):
            self.results.pop(result, None)
            self.published.discard(result)

    def result(self, name: str) -> dict[str, Any]:
        if name not in self.published:
            raise RpcError("NOT_FOUND", f"evaluation result {name} not found")
        return self.results[name]

    def list_results(self, evaluation: str) -> dict[str, Any]:
        mine = [self.results[n] for n in self.published if n.startswith(f"{evaluation}/results/")]
        return {"evaluationResults": sorted(mine, key=lambda r: (str(r["createTime"]), r["name"]), reverse=True)}

    def delete_result(self, name: str) -> None:
        if name not in self.published:
            raise RpcError("NOT_FOUND", f"evaluation result {name} not found")
        self.published.discard(name)
        self.results.pop(name, None)

    # --- the admin hook ------------------------------------------------------------------------

    def set_outcome(self, body: dict[str, Any]) -> dict[str, Any]:
        evaluation = body.get("evaluation")
        if not isinstance(evaluation, str) or "/evaluations/" not in evaluation:
            raise RpcError("INVALID_ARGUMENT", "evaluation must be the name of an evaluation (.../evaluations/ID)")
        if body.get("clear"):
            self.decided.pop(evaluation, None)
            self.scenario_decided.pop(evaluation, None)
            return {"evaluation": evaluation, "cleared": True}
        outcome, why = body.get("outcome"), str(body.get("explanation") or "")
        if outcome not in OUTCOMES:
            raise RpcError("INVALID_ARGUMENT", f"outcome must be one of {', '.join(OUTCOMES)}")
        if "turn" not in body and "step" not in body:
            self.scenario_decided[evaluation] = (str(outcome), why)
            return {"evaluation": evaluation, "outcome": outcome}
        turn, step = body.get("turn"), body.get("step")
        if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in (turn, step)):
            raise RpcError("INVALID_ARGUMENT", "turn and step are indexes (0-based) of the golden's turns and their steps")
        self.decided.setdefault(evaluation, {})[(int(turn), int(step))] = (str(outcome), why)  # type: ignore[arg-type]
        return {"evaluation": evaluation, "turn": turn, "step": step, "outcome": outcome}


# --- routes (v1beta only) ------------------------------------------------------------------------

RUNS_RE = re.compile(r"^/evaluationRuns(?:/([^/:]+))?\Z")
RESULTS_RE = re.compile(r"^/evaluations/([^/:]+)/results(?:/([^/:]+))?\Z")
# (action, response message, (metadata message, its fields)) -> the operation's JSON
Start = Callable[[dict[str, Any], str, tuple[str, dict[str, Any]]], dict[str, Any]]


def handles(rest: str) -> bool:
    """Whether a path below an app (``rest``) is one of these routes."""
    return rest == ":runEvaluation" or bool(RUNS_RE.match(rest) or RESULTS_RE.match(rest))


def printed(message: str, data: dict[str, Any], enum_int: bool) -> dict[str, Any]:
    """data as json_format prints the v1beta message (enums as numbers when asked for): what is
    served is checked to be that message, field by field."""
    parsed = api.message_class(f"{api.BETA_PACKAGE}.{message}")()
    json_format.ParseDict(data, parsed, descriptor_pool=api.pool())
    out: dict[str, Any] = json_format.MessageToDict(parsed, use_integers_for_enums=enum_int)
    return out


async def route(
    service: EvaluationService,
    method: str,
    parent: str,
    rest: str,
    body: Callable[[], Awaitable[dict[str, Any]]],
    start: Start,
    *,
    enum_int: bool = False,
) -> dict[str, Any]:
    """Answer one of the routes ``handles`` accepts."""
    if rest == ":runEvaluation" and method == "POST":
        sent = await body()
        app = sent.get("app")
        if app not in (None, "", parent):
            raise RpcError("INVALID_ARGUMENT", f"app {app!r} differs from the app of the URL, {parent}")
        run, metadata = await service.start_run(parent, sent)
        return start({"do": "evaluation_run", "run": run}, "RunEvaluationResponse", ("RunEvaluationOperationMetadata", metadata))
    runs, results = RUNS_RE.match(rest), RESULTS_RE.match(rest)
    if runs and runs.group(1) is None and method == "GET":
        return {"evaluationRuns": [printed("EvaluationRun", r, enum_int) for r in service.list_runs(parent)["evaluationRuns"]]}
    if runs and runs.group(1) is not None and method in ("GET", "DELETE"):
        name = f"{parent}/evaluationRuns/{runs.group(1)}"
        if method == "GET":
            return printed("EvaluationRun", service.run(name), enum_int)
        service.delete_run(name)
        # DeleteEvaluationRun is a long-running operation in v1beta (DeleteEvaluationRunOperationMetadata)
        return start({"do": "done", "response": {}}, "Empty", ("DeleteEvaluationRunOperationMetadata", {}))
    if results:
        evaluation = f"{parent}/evaluations/{results.group(1)}"
        if service.read(parent, "evaluations", results.group(1)) is None:
            raise RpcError("NOT_FOUND", f"{evaluation} not found")
        if results.group(2) is None and method == "GET":
            listed = service.list_results(evaluation)["evaluationResults"]
            return {"evaluationResults": [printed("EvaluationResult", r, enum_int) for r in listed]}
        if results.group(2) is not None and method in ("GET", "DELETE"):
            name = f"{evaluation}/results/{results.group(2)}"
            if method == "GET":
                return printed("EvaluationResult", service.result(name), enum_int)
            service.delete_result(name)
            return {}
    raise RpcError("NOT_FOUND", f"no method {method} {rest} on {parent}")
