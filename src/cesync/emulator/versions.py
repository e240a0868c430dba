"""App versions: CreateAppVersion (a snapshot of the draft) and RestoreAppVersion."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from .archive import ARCHIVED
from .calls import answer, json_body, query
from .errors import RpcError
from .service import Service
from .store import new_etag, now
from .wire import Printed, mask_paths, printed
from .writes import apply_mask, checked_body, stamp

_VERSION_WRITABLE = ("displayName", "description")


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
        # AppVersion.updateTime, "Output only. Timestamp when the app version was last updated."
        # (ces.v1.json rev 20261016, in the API description; the 0.7.2 protos lack it)
        data = stamp(data, f"{parent}/versions/{rid}", None)
        data["creator"] = "emulator@cesync.local"
        data["snapshot"] = self._snapshot(db, parent)
        res = printed("versions", data)
        self.store.put(db, parent, "versions", rid, res)
        return res

    async def patch_version(self, request: Request, parent: str, collection: str, rid: str | None) -> Any:
        """UpdateAppVersion (ces.v1.json rev 20261016, ``projects.locations.apps.versions.patch``; the 0.7.2
        protos lack it): "If [updateMask is] empty, fields display_name and description will be updated".
        Those are the only fields of AppVersion that are not output only or its identifier, so a mask
        naming another is INVALID_ARGUMENT (the document is silent on what the server does with one)."""
        assert rid is not None
        body = {k: v for k, v in checked_body("versions", await json_body(request)).items() if k in _VERSION_WRITABLE}
        paths = mask_paths(query(request).get("updateMask"), "versions") or list(_VERSION_WRITABLE)
        refused = [p for p in paths if p not in _VERSION_WRITABLE]
        if refused:
            raise RpcError(
                "INVALID_ARGUMENT",
                f"invalid update_mask path '{refused[0]}': an app version's writable fields are displayName and description",
            )
        self.store.app(parent)
        with self.store.transaction(write=True) as db:
            current = self._existing(db, parent, "versions", rid).data
            data = apply_mask(current, body, paths)
            data.update({"updateTime": now(), "etag": new_etag()})
            res = printed("versions", data)
            self.store.put(db, parent, "versions", rid, res)
        return answer(request, res)

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
