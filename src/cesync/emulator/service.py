"""The state every call works on and the lookups every family of calls makes (a resource or
an app that must exist, an app that must be unlocked, a long-running operation started)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from . import lists
from .calls import ID_RE, api_version, page_args, query
from .errors import RpcError
from .evaluations import EvaluationService
from .execute import Executor
from .extras import Extra, extras, without
from .guards import locked, locked_error
from .operations import Operations
from .quota import QuotaConfig, QuotaState
from .store import Store, page_token
from .wire import Parsed, Printed, kind
from .writes import apply_mask, checked_parsed, with_extras

Extras = list[Extra]  # module names: inside Emulator, "list" is its list method
Paths = list[str] | None


def not_found(parent: str, collection: str, rid: str) -> RpcError:
    return RpcError("NOT_FOUND", f"{kind(collection).words} {parent}/{collection}/{rid} not found")


class Service:
    """The emulator's state (set by app.Emulator) and the calls every family shares."""

    store: Store
    executor: Executor
    evaluations: EvaluationService  # runEvaluation's runs and results (the evaluations' run filter reads them)
    operations: Operations
    # Fields a newer CES has and the snapshot lacks, as (message, JSON name), taught by /admin/inject:
    # this server then stores them wherever they sit, returns them, and takes them in requests.
    taught: set[tuple[str, str]]
    quota: QuotaConfig  # the settings (create_app, /admin/quota)
    quota_state: QuotaState  # the buckets per project and location, and what they refused

    def _split(self, collection: str, body: dict[str, Any]) -> tuple[dict[str, Any], list[Extra]]:
        """A request body without the taught fields it holds, and those fields; untaught ones stay for
        the usual INVALID_ARGUMENT ('Unknown name')."""
        if not self.taught:
            return body, []
        found = extras(collection, body)
        if not found or any((e.message, str(e.path[-1])) not in self.taught for e in found):
            return body, []
        return without(body, found), found

    def _read_copy(self, parent: str, collection: str, rid: str) -> dict[str, Any] | None:
        self.store.app(parent)
        with self.store.transaction() as db:
            found = self.store.get(db, parent, collection, rid)
        return found.data if found is not None else None

    def _tools_copy(self, parent: str) -> dict[str, dict[str, Any]]:
        self.store.app(parent)
        with self.store.transaction() as db:
            return self.store.all_data(db, parent, "tools")

    def _existing(self, db: Any, parent: str, collection: str, rid: str) -> Printed:
        found = self.store.get(db, parent, collection, rid)
        if found is None:
            raise not_found(parent, collection, rid)
        return found

    def _existing_app(self, db: Any, parent: str) -> Printed:
        found = self.store.get_app(db, parent)
        if found is None:
            raise RpcError("NOT_FOUND", f"app {parent} not found")
        return found

    def _unlocked(self, db: Any, parent: str) -> None:
        """FAILED_PRECONDITION when the app is locked (see locked_error)."""
        app = self.store.get_app(db, parent)
        if app is not None and locked(app.data):
            raise locked_error(parent)

    def _new_id(self, request: Request, collection: str) -> str | None:
        rid = query(request).get(kind(collection).id_param)
        if rid is not None and not ID_RE.match(rid):
            raise RpcError("INVALID_ARGUMENT", f"invalid {kind(collection).id_param} '{rid}'")
        return rid

    def _masked(
        self,
        collection: str,
        known: dict[str, Any],
        whole: Parsed | None,
        incoming: dict[str, Any],
        taught: Extras,
        paths: Paths,
    ) -> tuple[Parsed, Extras]:
        """An update's resource, checked, and the taught fields it holds at any depth: what the mask
        names comes from the request (its taught fields with it), the rest stays as stored."""
        if whole is not None:
            return whole, taught
        merged = apply_mask(known, with_extras(incoming, taught), paths or [])
        nested = extras(collection, merged) if self.taught else []
        return checked_parsed(collection, without(merged, nested) if nested else merged), nested

    def _start(self, request: Request, location: str, action: dict[str, Any], response: str = "") -> Response:
        response = response or {"create_app": "App", "restore": "RestoreAppVersionResponse"}.get(action["do"], "Empty")
        return JSONResponse(self.operations.start(api_version(request), location, action, response))

    async def get_operation(self, request: Request, name: str) -> Any:
        return self.operations.get(name)

    async def delete_operation(self, request: Request, name: str) -> Any:
        return self.operations.delete(name)

    async def list_operations(self, request: Request, location: str) -> Any:
        """ListOperations: its filter (lists.py), pageSize and pageToken; by name."""
        asked = lists.listing("operations", query(request), version=api_version(request))
        offset, size = page_args(request, f"{location}|{asked.key}")
        listed = asked.arranged(self.operations.list(location)["operations"], lambda o: o)
        page, following = lists.paged(listed, offset, size)
        out: dict[str, Any] = {"operations": page}
        if following is not None:
            out["nextPageToken"] = page_token(following, f"{location}|{asked.key}")
        return out
