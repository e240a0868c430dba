"""Apps: list, create (a long-running operation), get, update (lock rules, v1beta fields), delete."""

from __future__ import annotations

import json
import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from . import lists
from .beta import beta_fields, beta_mask, beta_update, without_beta
from .calls import ID_RE, api_version, json_body, page_args, query
from .changelogs import Changelogs
from .errors import RpcError
from .guards import locked, locked_error
from .integrity import References
from .store import app_data, page_token
from .wire import checked, etag_honoured, mask_paths, printed, split_known
from .writes import checked_body, checked_parsed, server_defaults, stamp, with_extras


class Apps(References, Changelogs):
    """The calls on apps themselves."""

    async def list_apps(self, request: Request, location: str) -> Any:
        """ListApps: its filter and orderBy as lists.py says, by name when no order is asked for."""
        asked = lists.listing("apps", query(request), version=api_version(request))
        offset, size = page_args(request, f"{location}|{asked.key}")
        with self.store.transaction() as db:
            apps = asked.arranged(self.store.list_apps(db, location), lambda a: a.data)
        shown = [bytes(without_beta(request, a).body).decode() for a in apps[offset : offset + size]]
        text = '{"apps":[' + ",".join(shown) + "]"
        if offset + size < len(apps):
            text += f',"nextPageToken":{json.dumps(page_token(offset + size, f"{location}|{asked.key}"))}'
        return Response(text + "}", media_type="application/json")

    async def create_app(self, request: Request, location: str) -> Any:
        body, beta = beta_fields(request, await json_body(request))
        data = checked_body("apps", body)
        data.update({k: v for k, v in beta.items() if v is not None})
        rid = query(request).get("appId") or f"app-{uuid.uuid4().hex[:12]}"
        if not ID_RE.match(rid):
            raise RpcError("INVALID_ARGUMENT", f"invalid appId '{rid}'")
        parent = f"{location}/apps/{rid}"
        with self.store.transaction() as db:
            if self.store.get_app(db, parent) is not None:
                raise RpcError("ALREADY_EXISTS", f"app {parent} already exists")
            self._check_references(db, parent, "app", data)  # a new app has nothing to name
        return self._start(request, location, {"do": "create_app", "parent": parent, "data": data})

    def _do_create_app(self, db: Any, parent: str, data: dict[str, Any]) -> dict[str, Any]:
        if self.store.get_app(db, parent) is not None:
            raise RpcError("ALREADY_EXISTS", f"app {parent} already exists")
        res = printed("apps", server_defaults("apps", app_data(parent, data)))
        self.store.create_app(db, parent, res)
        return res.data

    async def get_app(self, request: Request, parent: str) -> Any:
        self.store.app(parent)
        with self.store.transaction() as db:
            return without_beta(request, self._existing_app(db, parent))

    async def patch_app(self, request: Request, parent: str) -> Any:
        v1_body, beta = beta_fields(request, await json_body(request))
        body, taught = self._split("apps", v1_body)
        raw_mask, beta_paths = beta_mask(request)
        paths = [] if raw_mask == "-" else mask_paths(raw_mask, "apps")
        whole = checked_parsed("apps", body) if paths is None else None
        incoming = whole.data if whole is not None else checked("apps", body, complete=False).data
        etag = (body.get("etag") or "") if etag_honoured("apps") else ""  # App.etag is OUTPUT_ONLY: ignored
        self.store.app(parent)
        with self.store.transaction(write=True) as db:
            current = self._existing_app(db, parent).data
            if etag and etag != current.get("etag"):
                raise RpcError("ABORTED", f"etag mismatch for {parent}: it was changed since it was read")
            known, unknown = split_known("apps", current)
            parsed, nested = self._masked("apps", known, whole, incoming, taught, paths)
            data = server_defaults("apps", stamp(dict(parsed.data), parent, current.get("createTime")))
            if locked(current) and locked(data):
                raise locked_error(parent)  # only the update that unlocks a locked app passes
            self._check_references(db, parent, "app", data)
            data.update(unknown)
            data = beta_update(data, beta, beta_paths, replace=paths is None and api_version(request) == "v1beta")
            res = printed("apps", with_extras(data, nested))
            self.store.put_app(db, parent, res)
            self._log(db, request, parent, "UPDATE", "apps", current, res.data)
        return without_beta(request, res)

    async def delete_app(self, request: Request, parent: str) -> Any:
        etag = query(request).get("etag") or ""
        with self.store.transaction() as db:
            current = self._existing_app(db, parent).data
        if locked(current):
            raise locked_error(parent)
        if etag and etag != current.get("etag"):
            raise RpcError("ABORTED", f"etag mismatch for {parent}: it was changed since it was read")
        return self._start(request, parent.rsplit("/apps/", 1)[0], {"do": "delete_app", "parent": parent})

    def _do_delete_app(self, db: Any, parent: str) -> dict[str, Any]:
        self._existing_app(db, parent)
        self.store.delete_app(db, parent)
        return {}
