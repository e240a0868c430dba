"""Long-running operations (CreateApp, DeleteApp, exportApp, importApp, RestoreAppVersion, runEvaluation).

An operation is a row of the store: the action it stands for and, once done, its
``response`` or ``error``. The action runs when the operation completes, which is
``delay`` seconds after it started (and, for an action with work in the background, once
that work is done: an evaluation run's replay, see ``ready``), at the first poll or API
call after that: clients
really poll, and what the operation does is not visible before it is done (as in
CES, a second CreateApp of the same id racing the first fails in its operation).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from .errors import RpcError
from .store import Store, now

__all__ = ["Action", "Operations", "operation_json", "type_url"]

Action = Callable[..., dict[str, Any]]  # (db, **arguments) -> the response's fields
Ready = Callable[..., bool]  # (**arguments) -> whether the action's background work is done
DEFAULT_DELAY = 0.2


def type_url(version: str, message: str) -> str:
    """The ``@type`` of a message in the API version the operation was asked in."""
    package = "google.protobuf" if message == "Empty" else f"google.cloud.ces.{version}"
    return f"type.googleapis.com/{package}.{message}"


def operation_json(record: dict[str, Any]) -> dict[str, Any]:
    """A google.longrunning.Operation as REST prints it."""
    out = {"name": record["name"], "metadata": record["metadata"], "done": record["done"]}
    for key in ("response", "error"):
        if key in record:
            out[key] = record[key]
    return out


class Operations:
    def __init__(
        self,
        store: Store,
        actions: dict[str, Action],
        delay: float = DEFAULT_DELAY,
        clock: Callable[[], float] = time.time,
        ready: dict[str, Ready] | None = None,
    ) -> None:
        self.store = store
        self.actions = actions  # what an operation may do, by name; "done" answers a response made at the start
        self.ready = ready or {}  # actions that wait for work going on in the background, by name
        self.delay = delay
        # wall-clock seconds: due times are kept in the state file, which other processes share
        self.clock = clock
        self._pending = 0  # started here and not yet settled: while 0, API calls skip the due query

    def start(
        self,
        version: str,
        location: str,
        action: dict[str, Any],
        response: str,
        metadata: tuple[str, dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Begin an operation; its JSON (done at once only with a delay of 0). metadata: the
        message of a method's own (RunEvaluationOperationMetadata) and its fields."""
        name = f"{location}/operations/operation-{uuid.uuid4().hex[:16]}"
        kind, fields = metadata or ("OperationMetadata", {"createTime": now()})
        record = {
            "name": name,
            "metadata": {"@type": type_url(version, kind), **fields},
            "done": False,
            "action": action,
            "version": version,
            "responseType": response,
        }
        with self.store.transaction(write=True) as db:
            self.store.put_operation(db, name, self.clock() + self.delay, record)
        self._pending += 1
        if self.delay <= 0:
            record = self.settle(name) or record
        return operation_json(record)

    def settle_due(self) -> None:
        """Finish the operations whose time has come (before each API call while any are pending)."""
        if self._pending <= 0:
            return
        with self.store.transaction() as db:
            names = self.store.due_operations(db, self.clock())
        for name in names:
            self.settle(name)

    def settle(self, name: str) -> dict[str, Any] | None:
        """The operation, finished first if its time has come; None when there is none of that name."""
        with self.store.transaction(write=True) as db:
            found = self.store.get_operation(db, name)
            if found is None:
                return None
            due, record = found
            if record["done"] or due > self.clock():
                return record
            arguments = dict(record["action"])
            do = arguments.pop("do")
            if do in self.ready and not self.ready[do](**arguments):
                return record  # due, but its work goes on: done at a poll after it ends
            try:
                result = arguments["response"] if do == "done" else self.actions[do](db, **arguments)
                record["response"] = {"@type": type_url(record["version"], record["responseType"]), **result}
            except RpcError as exc:
                record["error"] = exc.status_json()
            except Exception as exc:  # a bug here must not leave the operation running for ever
                record["error"] = RpcError("INTERNAL", f"{type(exc).__name__}: {exc}").status_json()
            record["done"] = True
            record["metadata"]["endTime"] = now()
            self.store.put_operation(db, name, due, record)
        self._pending = max(0, self._pending - 1)
        return record

    def get(self, name: str) -> dict[str, Any]:
        record = self.settle(name)
        if record is None:
            raise RpcError("NOT_FOUND", f"operation {name} not found")
        return operation_json(record)

    def delete(self, name: str) -> dict[str, Any]:
        with self.store.transaction(write=True) as db:
            if self.store.get_operation(db, name) is None:
                raise RpcError("NOT_FOUND", f"operation {name} not found")
            self.store.delete_operation(db, name)
        return {}

    def list(self, location: str) -> dict[str, Any]:
        with self.store.transaction() as db:
            names = self.store.operation_names(db, location)
        return {"operations": [operation_json(r) for n in names if (r := self.settle(n)) is not None]}
