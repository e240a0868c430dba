"""App versions: CreateAppVersion (a snapshot of the draft) and RestoreAppVersion."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from .archive import ARCHIVED
from .calls import answer, json_body
from .errors import RpcError
from .service import Service
from .store import new_etag, now
from .wire import Printed, printed
from .writes import checked_body, stamp


class Versions(Service):
    """App versions and their snapshots."""

    async def create_version(self, request: Request, parent: str) -> Any:
        data = checked_body("versions", await json_body(request))
        rid = self._new_id(request, "versions")
        self.store.app(parent)
        with self.store.transaction(write=True) as db:
            res = self._new_version(db, parent, rid, data)
        return answer(request, res)

    def _new_version(self, db: Any, parent: str, rid: str | None, data: dict[str, Any]) -> Printed:
        """An app version of the draft as it is now (server-assigned id when rid is None)."""
        if rid is None:
            rid = self.store.next_id(db, parent, "version")
        if self.store.get(db, parent, "versions", rid) is not None:
            raise RpcError("ALREADY_EXISTS", f"app version {parent}/versions/{rid} already exists")
        data = stamp(data, f"{parent}/versions/{rid}", None)
        data.pop("updateTime")  # an AppVersion has no update time
        data["creator"] = "emulator@cesync.local"
        data["snapshot"] = self._snapshot(db, parent)
        res = printed("versions", data)
        self.store.put(db, parent, "versions", rid, res)
        return res

    def _snapshot(self, db: Any, parent: str) -> dict[str, Any]:
        """An AppSnapshot: the app and its archived resources (system tools come with every app)."""
        snapshot: dict[str, Any] = {"app": self._existing_app(db, parent).data}
        for collection in ARCHIVED:
            items = [d for d in self.store.all_data(db, parent, collection).values() if "systemTool" not in d]
            if items:
                snapshot[collection] = items
        return snapshot

    async def restore(self, request: Request, parent: str, collection: str, rid: str | None) -> Any:
        assert rid is not None
        self.store.app(parent)
        with self.store.transaction() as db:
            version = self._existing(db, parent, "versions", rid).data
            self._unlocked(db, parent)
        return self._start(request, parent.rsplit("/apps/", 1)[0], {"do": "restore", "version": version["name"]})

    def _do_restore(self, db: Any, version: str) -> dict[str, Any]:
        parent, _, rid = version.rpartition("/versions/")
        snapshot = self._existing(db, parent, "versions", rid).data.get("snapshot", {})
        current = self._existing_app(db, parent).data
        # AgentService.RestoreAppVersion (google-cloud-ces): "This will create a new app version from the
        # current draft app and overwrite the current draft with the specified app version." Its id,
        # display name and description are not documented: a server-assigned id, nothing else set.
        self._new_version(db, parent, None, {})
        for collection in ARCHIVED:
            for old_id, old in self.store.all_data(db, parent, collection).items():
                if "systemTool" not in old:
                    self.store.delete(db, parent, collection, old_id)
            for item in snapshot.get(collection, []):
                item = {**item, "updateTime": now(), "etag": new_etag()}
                self.store.put(db, parent, collection, item["name"].rsplit("/", 1)[-1], printed(collection, item))
        app = {**snapshot.get("app", {}), "name": parent, "createTime": current.get("createTime"), "updateTime": now()}
        app["etag"] = new_etag()
        self.store.put_app(db, parent, printed("apps", app))
        return {}
