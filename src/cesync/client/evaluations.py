"""Running an app's evaluations (v1beta): runEvaluation, waited for, and what the run produced.

``POST {app}:runEvaluation`` answers a long-running operation (RunEvaluationOperationMetadata
names the run); it is polled with the client's operation polling (apps.wait_operation), each
progress line saying how far the run is (``EvaluationRun.progress``), then the run and each of
its ``evaluationResults`` are read. runEvaluation is never resent: a second request would
start a second run. Reads are retried as every read (429 and 5xx with backoff).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from ..api.resource import ID_RE
from ..core.scrubber import clip
from ..errors import BadReply
from .api import CesClient
from .apps import Polling, wait_operation

__all__ = ["RunRead", "list_evaluations", "run_evaluations"]

RUN_WORDS = "run evaluations"


@dataclass(frozen=True)
class RunRead:
    run: dict[str, Any]
    results: list[dict[str, Any]]


async def list_evaluations(client: CesClient, parent: str) -> list[dict[str, Any]]:
    """The app's evaluations as the server holds them."""
    return await client.pages(f"{parent}/evaluations", "evaluations", "list evaluations", parent)


async def _read(client: CesClient, name: str, what: str) -> dict[str, Any]:
    return await client._retrying(lambda: client._call("GET", name, what, name))


def _below(name: object, prefix: str) -> bool:
    """name is prefix + a plain id: a name of the server's is read only when it can name nothing
    else ('..', '%2F', '?', '#' or more segments would move the GET to another resource)."""
    return isinstance(name, str) and name.startswith(prefix) and bool(ID_RE.match(name[len(prefix) :]))


def _run_name(operation: dict[str, Any], parent: str) -> str:
    metadata = operation.get("metadata")
    name = metadata.get("evaluationRun") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) and _below(name, f"{parent}/evaluationRuns/") else ""


MAX_SERVED = 10  # versions one deployment's run may judge (a split of more is no canary)


async def run_evaluations(
    client: CesClient,
    parent: str,
    evaluations: list[str],
    *,
    run_count: int = 1,
    display_name: str = "",
    polling: Polling | None = None,
    against: dict[str, str] | None = None,
) -> RunRead:
    """Run the evaluations (full names) run_count times each; the finished run and its results.

    against: ``{"appVersion": NAME}`` or ``{"deployment": NAME}`` (v1beta RunEvaluationRequest),
    what the run judges instead of the draft; a deployment's run has a result per version it serves."""
    body: dict[str, Any] = {"app": parent, "evaluations": evaluations, "runCount": run_count, **(against or {})}
    if display_name:
        body["displayName"] = display_name
    operation = await client._call("POST", f"{parent}:runEvaluation", RUN_WORDS, parent, body=body)
    name = _run_name(operation, parent)

    async def progress() -> str:
        if not name:
            return ""
        run = await _read(client, name, "get evaluation run")
        p = run.get("progress")
        total, done = (p.get("totalCount"), p.get("completedCount", 0)) if isinstance(p, dict) else (None, 0)
        return f"{done} of {total} results" if isinstance(total, int) else ""

    response = await wait_operation(client, operation, RUN_WORDS, parent, polling, progress=progress)
    said = response.get("evaluationRun") or name
    if not _below(said, f"{parent}/evaluationRuns/"):
        raise BadReply(
            f"the finished operation names no evaluation run of {parent} ({clip(repr(str(said)), 120)}, expected "
            f"{parent}/evaluationRuns/ID): nothing of it was read",
            operation=RUN_WORDS,
            resource=parent,
        )
    name = str(said)
    run = await _read(client, name, "get evaluation run")
    names = run.get("evaluationResults") or []
    if not isinstance(names, list):
        raise BadReply("the run's evaluationResults is not a list of names", operation=RUN_WORDS, resource=name)
    wanted = len(evaluations) * run_count * (MAX_SERVED if against and "deployment" in against else 1)
    if len(names) > wanted:  # each is read: a server listing a million would have cesync make a million GETs
        raise BadReply(
            f"the run lists {len(names)} results, more than the {wanted} asked for "
            f"({len(evaluations)} evaluations x {run_count} runs): none was read",
            operation=RUN_WORDS,
            resource=name,
        )
    outside = [n for n in names if not any(_below(n, f"{e}/results/") for e in evaluations)]
    if outside:
        raise BadReply(
            f"the run lists {clip(repr(str(outside[0])), 120)}, which is not a result ({{evaluation}}/results/ID) "
            "of an evaluation it was asked to run: none was read",
            operation=RUN_WORDS,
            resource=name,
        )
    results = await asyncio.gather(*(_read(client, n, "get evaluation result") for n in names))
    return RunRead(run, list(results))
