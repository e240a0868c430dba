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


def _run_name(operation: dict[str, Any]) -> str:
    metadata = operation.get("metadata")
    name = metadata.get("evaluationRun") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else ""


async def run_evaluations(
    client: CesClient,
    parent: str,
    evaluations: list[str],
    *,
    run_count: int = 1,
    display_name: str = "",
    polling: Polling | None = None,
) -> RunRead:
    """Run the evaluations (full names) run_count times each; the finished run and its results."""
    body: dict[str, Any] = {"app": parent, "evaluations": evaluations, "runCount": run_count}
    if display_name:
        body["displayName"] = display_name
    operation = await client._call("POST", f"{parent}:runEvaluation", RUN_WORDS, parent, body=body)
    name = _run_name(operation)

    async def progress() -> str:
        if not name:
            return ""
        run = await _read(client, name, "get evaluation run")
        p = run.get("progress")
        total, done = (p.get("totalCount"), p.get("completedCount", 0)) if isinstance(p, dict) else (None, 0)
        return f"{done} of {total} results" if isinstance(total, int) else ""

    response = await wait_operation(client, operation, RUN_WORDS, parent, polling, progress=progress)
    name = str(response.get("evaluationRun") or name)
    if not name.startswith(f"{parent}/evaluationRuns/"):
        raise BadReply(
            f"the finished operation names no evaluation run of {parent} ({name[:120]!r})", operation=RUN_WORDS, resource=parent
        )
    run = await _read(client, name, "get evaluation run")
    names = run.get("evaluationResults") or []
    if not isinstance(names, list) or not all(isinstance(n, str) and n.startswith(f"{parent}/evaluations/") for n in names):
        raise BadReply(
            "the run's evaluationResults are not results of this app's evaluations", operation=RUN_WORDS, resource=name
        )
    results = await asyncio.gather(*(_read(client, n, "get evaluation result") for n in names))
    return RunRead(run, list(results))
