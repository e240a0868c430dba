"""ExportApp and ImportApp: an app and its resources as an archive, and back (conflict strategies,
references resolved by folder or display name)."""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Callable
from typing import Any

from starlette.requests import Request

from . import evaluation_kinds
from .archive import EXPORTED, pack, unpack
from .calls import ID_RE, json_body, request_message
from .errors import RpcError
from .guards import locked, locked_error
from .integrity import References
from .resources import references
from .store import app_data
from .versions import Versions
from .wire import kind, map_references, printed
from .writes import checked_body, server_fields, stamp


def _folder_id(folder: str) -> str | None:
    rid = re.sub(r"[^A-Za-z0-9_-]+", "-", folder).strip("-_")[:128]
    return rid if rid and ID_RE.match(rid) else None


def _resolver(parent: str, ids: dict[str, dict[str, str]], exists: Callable[[str, str], bool]) -> Any:
    """Short names of an archive (folder or display name) -> resource names of the app they are imported into."""

    def for_resource(warnings: list[str], where: str) -> Callable[[str, str], str | None]:
        def change(collection: str, value: str) -> str | None:
            if value.startswith("projects/"):
                return value
            if "/" in value:
                return f"{parent}/{value}"
            rid = ids.get(collection, {}).get(value)
            if rid is None and exists(collection, value):
                rid = value
            if rid is None:
                warnings.append(f"{where}: {collection}/{value} is not in the archive or the app; the reference was dropped")
                return None
            return f"{parent}/{collection}/{rid}"

        return change

    return for_resource


class ExportImport(References, Versions):
    """ExportApp and ImportApp."""

    async def export_app(self, request: Request, parent: str) -> Any:
        body = request_message("ExportAppRequest", {**await json_body(request), "name": parent})
        fmt = body.get("exportFormat")
        if fmt not in ("JSON", "YAML"):
            raise RpcError("INVALID_ARGUMENT", "exportFormat is required: JSON or YAML")
        if body.get("gcsUri"):
            raise RpcError("INVALID_ARGUMENT", "the emulator has no Cloud Storage: leave gcsUri unset to get appContent")
        self.store.app(parent)
        with self.store.transaction() as db:
            if body.get("appVersion"):
                vparent, _, vid = str(body["appVersion"]).rpartition("/versions/")
                if vparent != parent:
                    raise RpcError("INVALID_ARGUMENT", f"appVersion {body['appVersion']} is not a version of {parent}")
                snapshot = self._existing(db, parent, "versions", vid).data.get("snapshot", {})
            else:
                snapshot = self._snapshot(db, parent)
                for collection in evaluation_kinds.EVALUATION_COLLECTIONS:  # the draft's, beside its snapshot
                    snapshot[collection] = list(self.store.all_data(db, parent, collection).values())
        resources = {c: {d["name"].rsplit("/", 1)[-1]: d for d in snapshot.get(c, [])} for c in EXPORTED}
        content = pack({**snapshot["app"], "name": parent}, resources, yaml=fmt == "YAML")
        response = {"appContent": base64.b64encode(content).decode()}
        return self._start(request, parent.rsplit("/apps/", 1)[0], {"do": "done", "response": response}, "ExportAppResponse")

    async def import_app(self, request: Request, location: str) -> Any:
        body = request_message("ImportAppRequest", {**await json_body(request), "parent": location})
        if body.get("gcsUri"):
            raise RpcError("INVALID_ARGUMENT", "the emulator has no Cloud Storage: send the archive as appContent")
        if not body.get("appContent"):
            raise RpcError("INVALID_ARGUMENT", "appContent is required")
        rid = body.get("appId") or f"app-{uuid.uuid4().hex[:12]}"
        if not ID_RE.match(rid):
            raise RpcError("INVALID_ARGUMENT", f"invalid appId '{rid}'")
        unpack(base64.b64decode(body["appContent"]))  # an unreadable archive is refused at once
        if not body.get("ignoreAppLock"):
            with self.store.transaction() as db:
                existing = self.store.get_app(db, f"{location}/apps/{rid}")
            if existing is not None and locked(existing.data):
                raise locked_error(f"{location}/apps/{rid}")
        strategy = (body.get("importOptions") or {}).get("conflictResolutionStrategy") or "REPLACE"
        action = {
            "do": "import_app",
            "parent": f"{location}/apps/{rid}",
            "content": body["appContent"],
            "display_name": body.get("displayName") or "",
            "strategy": strategy,
        }
        return self._start(request, location, action, "ImportAppResponse")

    def _do_import_app(self, db: Any, parent: str, content: str, display_name: str, strategy: str) -> dict[str, Any]:
        bundle = unpack(base64.b64decode(content))
        existing = self.store.get_app(db, parent)
        if existing is not None and display_name:
            raise RpcError("INVALID_ARGUMENT", "displayName must not be set when importing into an existing app")
        if existing is None:
            name = display_name or bundle.app.get("displayName") or parent.rsplit("/", 1)[-1]
            self.store.create_app(db, parent, printed("apps", app_data(parent, {"displayName": name})))
        warnings = list(bundle.warnings)
        ids = self._import_ids(db, parent, bundle.resources, strategy)
        resolve = _resolver(parent, ids, lambda c, r: self.store.get(db, parent, c, r) is not None)
        valid: dict[str, dict[str, dict[str, Any]]] = {}
        for collection in EXPORTED:
            for folder, data in bundle.resources.get(collection, {}).items():
                try:
                    body = checked_body(collection, map_references(collection, data, resolve(warnings, f"{collection}/{folder}")))
                except RpcError as exc:
                    warnings.append(f"{collection}/{folder}: {exc.message}")
                    continue
                valid.setdefault(collection, {})[ids[collection][folder]] = body
        for collection, items in valid.items():
            for rid, body in items.items():
                old = self.store.get(db, parent, collection, rid)
                data = server_fields(collection, parent, rid, body, old.data.get("createTime") if old else None)
                self.store.put(db, parent, collection, rid, printed(collection, data))
        evaluation_kinds.after_write(self.store, db, parent, "evaluations")
        dangling = {n for items in valid.values() for d in items.values() for _, n, c, r in references(d, parent)} | {
            n for _, n, c, r in references(bundle.app, parent)
        }
        for name in sorted(dangling):
            collection, rid = name[len(parent) + 1 :].split("/")[:2]
            if self.store.get(db, parent, collection, rid) is None:
                warnings.append(f"{name} was not imported; references to it were dropped")
                self._unreference(db, parent, name, self._referrers(db, parent, name))
        app = self._existing_app(db, parent).data
        settings = {k: v for k, v in bundle.app.items() if k != "displayName" or (existing is None and not display_name)}
        settings = map_references("apps", settings, resolve(warnings, "app"))
        settings = {k: v for k, v in settings.items() if not (isinstance(v, str) and v in dangling)}
        try:
            fields = checked_body("apps", {"displayName": app["displayName"], **settings})
        except RpcError as exc:
            warnings.append(f"app: {exc.message}")
            fields = {"displayName": app["displayName"]}
        self.store.put_app(db, parent, printed("apps", stamp(fields, parent, app.get("createTime"))))
        return {"name": parent, **({"warnings": warnings} if warnings else {})}

    def _import_ids(
        self, db: Any, parent: str, resources: dict[str, dict[str, dict[str, Any]]], strategy: str
    ) -> dict[str, dict[str, str]]:
        """Which resource of the app each folder becomes: OVERWRITE empties the app first; REPLACE matches display names."""
        ids: dict[str, dict[str, str]] = {}
        for collection in EXPORTED:
            current = {rid: d for rid, d in self.store.all_data(db, parent, collection).items() if "systemTool" not in d}
            if strategy == "OVERWRITE":
                for rid in current:
                    self.store.delete(db, parent, collection, rid)
                current = {}
            by_display = {d.get("displayName"): rid for rid, d in current.items()}
            taken = set(current)
            table = ids.setdefault(collection, {})
            for folder, data in resources.get(collection, {}).items():
                match = by_display.get(data.get("displayName") or folder)
                rid = match or _folder_id(folder) or ""
                if match is None and (rid in taken or not rid):
                    rid = self.store.next_id(db, parent, kind(collection).singular)
                taken.add(rid)
                table[folder] = rid
        return ids
