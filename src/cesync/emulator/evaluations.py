"""Evaluation runs in the emulator (v1beta): ``apps:runEvaluation``, ``evaluationRuns`` and results.

``POST /v1beta/{app}:runEvaluation`` (RunEvaluationRequest: ``evaluations`` or
``evaluationDataset``, ``runCount``, ``displayName``) answers a long-running operation at
once (``RunEvaluationOperationMetadata``; its response a ``RunEvaluationResponse`` naming
the run) and replays each evaluation ``runCount`` times (v1beta's default: 1 per golden,
5 per scenario) in the background, one result after another. While it replays the run is
RUNNING, its ``progress`` counting the results completed, passed and failed so far, and
its results are not listed; the operation is done once the replay has finished (and the
emulator's operation delay has passed). The run is then COMPLETED with ``progress``,
``evaluationRunSummaries`` and ``evaluationResults``, each
result an ``EvaluationResult`` (see golden.py for what is judged and how) under
``{evaluation}/results/{id}``, and each evaluation carries ``evaluationRuns``,
``lastCompletedResult`` and ``aggregatedMetrics`` (pass and fail counts and tool metrics
for the draft, app version id "-"). Field names and enums are v1beta's
(google-cloud-ces ``types/evaluation.py``, ``types/evaluation_service.py``).

Scenario evaluations need a simulated user and a model: their results are SKIPPED unless a
test has set their outcome. ``/admin/evaluationOutcomes`` sets the outcome of what the
emulator cannot judge: ``{evaluation, turn, step, outcome[, explanation]}`` for a golden's
step, ``{evaluation, outcome}`` for a scenario, ``{evaluation, clear: true}`` to forget.

Bounds (v1beta is silent on both: RunEvaluationRequest.run_count documents its default only,
and no limit of runs at once is documented; these caps are the emulator's own, so that one
request cannot tie the server up): a request replays at most ``MAX_RESULTS`` results
(evaluations times runs; more is INVALID_ARGUMENT), and at most ``MAX_REPLAYING`` runs
replay at once in an emulator process (one more is RESOURCE_EXHAUSTED, 429, until one
finishes). Deleting a run while it replays stops its replay.

``appVersion`` or ``deployment`` (at most one: the discovery document ``ces.v1beta.json`` of
revision 20261016 says so of RunEvaluationRequest) choose what is replayed against: an app
version replays each golden with the tools of that version's snapshot (as they were when the
version was made), a deployment against each version its running traffic split gives traffic
(deployments.serving_versions), each result naming its ``appVersion``; neither, the draft.
Whether a deployment's run replays every served version is not documented; the emulator does,
so that a canary's new version is judged. ``/admin/evaluationOutcomes`` with ``{appVersion,
outcome[, explanation]}`` (no evaluation) forces the status of every result replayed against
that version: the fault switch a test fails a release gate with (``{appVersion, clear: true}``
forgets it).

Runs and results live in the emulator process (its store keeps resources only), so a run
is read back from the process that ran it.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format

from ..api import descriptors as api
from . import lists
from .calls import page_window
from .deployments import serving_versions, snapshot_executor
from .errors import RpcError
from .golden import Decided, RunTool, replay_golden
from .store import Store, now, page_token
from .wire import printed as printed_resource

__all__ = ["EvaluationService"]

OUTCOMES = ("PASS", "FAIL", "SKIPPED", "OUTCOME_UNSPECIFIED")
# The emulator's own bounds (v1beta states none, see above): each result replays every tool call
MAX_RUN_COUNT = 100
MAX_RESULTS = 1000
MAX_REPLAYING = 4


@dataclass
class EvaluationService:
    store: Store
    run_tool: Callable[[str], RunTool]  # parent -> executeTool of that app
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    published: set[str] = field(default_factory=set)
    decided: dict[str, Decided] = field(default_factory=dict)
    scenario_decided: dict[str, tuple[str, str]] = field(default_factory=dict)
    replaying: dict[str, asyncio.Task[None]] = field(default_factory=dict)  # run -> its replay
    version_decided: dict[str, tuple[str, str]] = field(default_factory=dict)  # app version -> forced outcome
    # (parent, a version's snapshot) -> executeTool against that snapshot's tools (set by the app)
    snapshot_tool: Callable[[str, dict[str, Any]], RunTool] = snapshot_executor
    # settles the operation of a run whose replay has finished (Operations.settle, set by the app)
    settle_operation: Callable[[str], object] = lambda name: None

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

    def _versions(self, parent: str, body: dict[str, Any]) -> list[str]:
        """The app versions the run replays against: appVersion's, the deployment's served ones, or the draft."""
        version, deployment = body.get("appVersion"), body.get("deployment")
        if version and deployment:
            raise RpcError("INVALID_ARGUMENT", "set at most one of appVersion or deployment")
        draft = f"{parent}/versions/-"
        if deployment:
            return serving_versions(self._own(parent, str(deployment), "deployments"), parent)
        if not version or version == draft:
            return [draft]
        self._own(parent, str(version), "versions")
        return [str(version)]

    def start_run(self, parent: str, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """Check the request and make its run, RUNNING with nothing replayed yet; (run name,
        RunEvaluationOperationMetadata). ``launch`` then replays it in the background."""
        evaluations = self._evaluations(parent, body)
        versions = self._versions(parent, body)
        count = body.get("runCount")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_RUN_COUNT):
            raise RpcError("INVALID_ARGUMENT", f"runCount must be a whole number from 1 to {MAX_RUN_COUNT}")
        plan = [
            (name, evaluation, version)
            for version in versions
            for name, evaluation in evaluations
            for _ in range(count or (5 if "scenario" in evaluation else 1))  # RunEvaluationRequest.run_count's default
        ]
        if len(plan) > MAX_RESULTS:
            raise RpcError(
                "INVALID_ARGUMENT",
                f"this run would replay {len(plan)} results ({len(evaluations)} evaluations x their runs); the emulator "
                f"replays at most {MAX_RESULTS} in one runEvaluation: run fewer evaluations or fewer times",
            )
        if len(self.replaying) >= MAX_REPLAYING:
            raise RpcError(
                "RESOURCE_EXHAUSTED",
                f"{len(self.replaying)} evaluation runs are replaying in this emulator, the most it replays at once: "
                "wait for one to finish (poll its operation) and run again",
            )
        run = f"{parent}/evaluationRuns/{uuid.uuid4().hex[:12]}"
        created = now()
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
            "progress": {"totalCount": len(plan)},
            "runCount": count or 1,
            "_plan": plan,  # what launch replays; "_" keys are the emulator's, never served
            "_pending": [],  # the results replayed, listed once the operation is done
            "_replayed": False,
        }
        metadata = {"evaluations": [n for n, _ in evaluations], "evaluationRun": run, "createTime": created, "verb": "create"}
        return run, metadata

    def launch(self, run: str, operation: str) -> None:
        """Replay the run in the background: the request that started it has its operation at once."""
        record = self.runs[run]
        record["operation"] = operation
        self.replaying[run] = asyncio.get_running_loop().create_task(self._replay(run, operation))

    def abandon(self, run: str) -> None:
        """Forget a run whose operation could not be started."""
        self.runs.pop(run, None)

    async def _replay(self, run: str, operation: str) -> None:
        record = self.runs[run]
        parent = run.split("/evaluationRuns/", 1)[0]
        progress = record["progress"]
        try:
            for name, evaluation, version in record.pop("_plan"):
                result = await self._result(parent, name, evaluation, run, record["createTime"], version)
                self.results[result["name"]] = result
                record["_pending"].append(result["name"])
                progress["completedCount"] = progress.get("completedCount", 0) + 1
                key = {"PASS": "passedCount", "FAIL": "failedCount"}.get(result["evaluationStatus"])
                if key:
                    progress[key] = progress.get(key, 0) + 1
        except Exception as exc:  # a bug here must end the run, not leave it RUNNING for ever
            record["_error"] = RpcError("INTERNAL", f"the replay failed: {type(exc).__name__}: {exc}")
        finally:  # also when cancelled (the run deleted): its slot is free again
            self.replaying.pop(run, None)
            record["_replayed"] = True
        self.settle_operation(operation)  # done now when the operation's delay has passed, else at a later poll

    def replayed(self, run: str) -> bool:
        """Whether the operation of run may settle: its replay has finished (or the run is gone,
        which the operation reports as NOT_FOUND)."""
        record = self.runs.get(run)
        return record is None or bool(record.get("_replayed"))

    def _tools_of(self, parent: str, version: str) -> RunTool:
        """executeTool of the draft, or of the version's snapshot (its tools as they were)."""
        if version == f"{parent}/versions/-":
            return self.run_tool(parent)
        stored = self.read(parent, "versions", version.rsplit("/", 1)[-1]) or {}
        return self.snapshot_tool(parent, stored.get("snapshot") or {})

    async def _result(
        self, parent: str, name: str, evaluation: dict[str, Any], run: str, created: str, version: str
    ) -> dict[str, Any]:
        result: dict[str, Any] = {
            "name": f"{name}/results/{uuid.uuid4().hex[:12]}",
            "displayName": f"{evaluation.get('displayName', name.rsplit('/', 1)[-1])} result - {created}",
            "createTime": created,
            "evaluationRun": run,
            "initiatedBy": "emulator@localhost",
            "appVersion": version,
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
        status, golden = await replay_golden(
            evaluation.get("golden") or {}, self._tools_of(parent, version), self.decided.get(name, {})
        )
        if version in self.version_decided:  # the fault switch: this version's results as a test set them
            status = self.version_decided[version][0]
        result["goldenResult"] = golden
        result["evaluationStatus"] = status
        return result

    def finish(self, db: Any, run: str) -> dict[str, Any]:
        """The operation's action: the run COMPLETED, its results listed, the evaluations told."""
        record = self.runs.get(run)
        if record is None:
            raise RpcError("NOT_FOUND", f"evaluation run {run} not found")
        names = record.pop("_pending", [])
        self.published.update(names)
        results = [self.results[n] for n in names]
        record["evaluationResults"] = names
        error = record.pop("_error", None)
        if isinstance(error, RpcError):
            record["state"] = "ERROR"
            raise error
        record["state"] = "COMPLETED"
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
        return {k: v for k, v in record.items() if not k.startswith("_")}

    def list_runs(self, parent: str) -> dict[str, Any]:
        mine = [self.run(n) for n in self.runs if n.startswith(f"{parent}/evaluationRuns/")]
        return {"evaluationRuns": sorted(mine, key=lambda r: str(r["createTime"]), reverse=True)}

    def delete_run(self, name: str) -> None:
        record = self.runs.pop(name, None)
        if record is None:
            raise RpcError("NOT_FOUND", f"evaluation run {name} not found")
        replay = self.replaying.pop(name, None)
        if replay is not None:
            replay.cancel()  # no more results for a run that is gone
        for result in record.get("evaluationResults", record.get("_pending", [])):
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
        if "appVersion" in body and "evaluation" not in body:
            return self._set_version_outcome(body)
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

    def _set_version_outcome(self, body: dict[str, Any]) -> dict[str, Any]:
        version = body.get("appVersion")
        if not isinstance(version, str) or "/versions/" not in version:
            raise RpcError("INVALID_ARGUMENT", "appVersion must be the name of an app version (.../versions/ID)")
        if body.get("clear"):
            self.version_decided.pop(version, None)
            return {"appVersion": version, "cleared": True}
        outcome = body.get("outcome")
        if outcome not in OUTCOMES:
            raise RpcError("INVALID_ARGUMENT", f"outcome must be one of {', '.join(OUTCOMES)}")
        self.version_decided[version] = (str(outcome), str(body.get("explanation") or ""))
        return {"appVersion": version, "outcome": outcome}


# --- routes (v1beta only) ------------------------------------------------------------------------

RUNS_RE = re.compile(r"^/evaluationRuns(?:/([^/:]+))?\Z")
RESULTS_RE = re.compile(r"^/evaluations/([^/:]+)/results(?:/([^/:]+))?\Z")
# (action, response message, (metadata message, its fields)) -> the operation's JSON
Start = Callable[[dict[str, Any], str, tuple[str, dict[str, Any]]], dict[str, Any]]


def handles(rest: str) -> bool:
    """Whether a path below an app (``rest``) is one of these routes."""
    return rest == ":runEvaluation" or bool(RUNS_RE.match(rest) or RESULTS_RE.match(rest))


def _listed(
    collection: str, parent: str, items: list[dict[str, Any]], query: Mapping[str, str], service: EvaluationService
) -> dict[str, Any]:
    """One page of a list of runs or results, filtered and ordered as its query asks (lists.py)."""
    asked = lists.listing(collection, query, service.runs.get, "v1beta")
    offset, size = page_window(query, f"{parent}|{asked.key}")
    page, following = lists.paged(asked.arranged(items, lambda r: r), offset, size)
    out: dict[str, Any] = {collection: page}
    if following is not None:
        out["nextPageToken"] = page_token(following, f"{parent}|{asked.key}")
    return out


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
    query: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Answer one of the routes ``handles`` accepts (query: the call's query parameters)."""
    query = query or {}
    if rest == ":runEvaluation" and method == "POST":
        sent = await body()
        app = sent.get("app")
        if app not in (None, "", parent):
            raise RpcError("INVALID_ARGUMENT", f"app {app!r} differs from the app of the URL, {parent}")
        run, metadata = service.start_run(parent, sent)
        try:
            operation = start(
                {"do": "evaluation_run", "run": run}, "RunEvaluationResponse", ("RunEvaluationOperationMetadata", metadata)
            )
        except BaseException:
            service.abandon(run)
            raise
        service.launch(run, str(operation["name"]))
        return operation
    runs, results = RUNS_RE.match(rest), RESULTS_RE.match(rest)
    if runs and runs.group(1) is None and method == "GET":
        listed = _listed("evaluationRuns", parent, service.list_runs(parent)["evaluationRuns"], query, service)
        return {**listed, "evaluationRuns": [printed("EvaluationRun", r, enum_int) for r in listed["evaluationRuns"]]}
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
            mine = service.list_results(evaluation)["evaluationResults"]
            found = _listed("evaluationResults", evaluation, mine, query, service)
            return {**found, "evaluationResults": [printed("EvaluationResult", r, enum_int) for r in found["evaluationResults"]]}
        if results.group(2) is not None and method in ("GET", "DELETE"):
            name = f"{evaluation}/results/{results.group(2)}"
            if method == "GET":
                return printed("EvaluationResult", service.result(name), enum_int)
            service.delete_result(name)
            return {}
    raise RpcError("NOT_FOUND", f"no method {method} {rest} on {parent}")
