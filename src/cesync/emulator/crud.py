"""List, create, get, update and delete: the standard methods of every collection of an app."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from . import evaluation_kinds, evaluations, lists, partial
from .calls import answer, api_version, json_body, page_args, query, wants_enum_int
from .changelogs import Changelogs
from .deployments import check_traffic
from .errors import RpcError
from .guards import force_allowed, unbound_force
from .integrity import References
from .service import not_found
from .store import page_token
from .versions import Versions
from .wire import checked, etag_honoured, kind, mask_paths, printed, split_known, without_input_only
from .writes import checked_parsed, refuse_server_made, server_fields, with_extras


def _who(users: list[tuple[str, str, dict[str, Any]]]) -> str:
    """'agent(s) a, b and the app' for an error message."""
    groups: dict[str, list[str]] = {}
    for collection, rid, _ in users:
        groups.setdefault(collection, []).append(rid)
    parts = [f"{kind(c).words}(s) {', '.join(sorted(ids))}" for c, ids in sorted(groups.items()) if c != "apps"]
    if "apps" in groups:
        parts.append("the app")
    return " and ".join(parts)


class Resources(References, Changelogs, Versions):
    """The standard methods of every collection of an app."""

    async def list(self, request: Request, parent: str, collection: str, _: str | None) -> Any:
        """Every list of an app's collection, with what lists.py says its query may ask for."""
        asked = lists.listing(collection, query(request), self.evaluations.runs.get, api_version(request))
        offset, size = page_args(request, f"{parent}|{asked.key}")
        field_name = "appVersions" if collection == "versions" else collection
        heads = collection == "versions" and not partial.selects(request.scope.get("ces_fields"), field_name, "snapshot")
        self.store.app(parent)
        enum_int = wants_enum_int(request)

        def listed(cut: str) -> tuple[list[str], int]:
            with self.store.transaction() as db:
                rows, total = self.store.page(
                    db,
                    parent,
                    collection,
                    system=collection != "tools" or asked.system_tools,
                    offset=offset,
                    size=size,
                    order=asked.plain,
                    arrange=lambda found: asked.arranged(found, lambda r: r[2]),
                    cut=cut,
                )
            return [r[1] if enum_int else r[0] for r in rows], total

        texts, total = listed("snapshot" if heads else "")
        if heads:  # the snapshot is not printed only to be parsed and dropped, nor read to be cut off here
            kept = [partial.head_before(t, "snapshot") for t in texts]
            texts = (
                [k for k in kept if k is not None]
                if None not in kept
                else [partial.without_last(t, "snapshot") for t in listed("")[0]]
            )
        if asked.last_ten_results:
            texts = [self._with_last_ten_results(text, enum_int) for text in texts]
        text = f'{{"{field_name}":[' + ",".join(texts) + "]"
        if offset + size < total:
            text += f',"nextPageToken":{json.dumps(page_token(offset + size, f"{parent}|{asked.key}"))}'
        return Response(text + "}", media_type="application/json")

    def _with_last_ten_results(self, text: str, enum_int: bool) -> str:
        """An evaluation as ListEvaluations answers it with lastTenResults=true: Evaluation.last_ten_results,
        "The last 10 evaluation results for this evaluation" (output only), newest first."""
        data = json.loads(text)
        listed = self.evaluations.list_results(str(data.get("name", "")))["evaluationResults"][:10]
        if listed:
            data["lastTenResults"] = [evaluations.printed("EvaluationResult", r, enum_int) for r in listed]
        return json.dumps(data, separators=(",", ":"))

    async def create(self, request: Request, parent: str, collection: str, _: str | None) -> Any:
        if collection == "versions":
            return await self.create_version(request, parent)
        c = kind(collection)
        body, taught = self._split(collection, await json_body(request))
        parsed = checked_parsed(collection, body)
        rid = self._new_id(request, collection)
        self.store.app(parent)
        with self.store.transaction(write=True) as db:
            self._unlocked(db, parent)
            if rid is None:
                rid = self.store.next_id(db, parent, c.singular)
            if self.store.get(db, parent, collection, rid) is not None:
                raise RpcError("ALREADY_EXISTS", f"{c.words} {parent}/{collection}/{rid} already exists")
            data = without_input_only(collection, server_fields(collection, parent, rid, dict(parsed.data), None))
            res = self._write(db, request, parent, collection, rid, data, taught)
        return answer(request, res)

    def _write(
        self,
        db: Any,
        request: Request,
        parent: str,
        collection: str,
        rid: str,
        data: dict[str, Any],
        extras: Any,
        *,
        before: dict[str, Any] | None = None,
        carried: dict[str, Any] | None = None,
    ) -> Any:
        """What every create (before None) and update stores: the checks on the fields it was sent,
        then the fields carried over unchecked (an update keeps those taught out of band), the
        write, the evaluations that follow it, the changelog; the resource as stored."""
        self._unique_display_name(db, parent, collection, data, rid)
        if collection == "deployments":
            check_traffic(data)
        self._check_references(db, parent, kind(collection).singular, data)
        data.update(carried or {})
        res = printed(collection, with_extras(data, extras))
        self.store.put(db, parent, collection, rid, res)
        evaluation_kinds.after_write(self.store, db, parent, collection)
        self._log(db, request, parent, "CREATE" if before is None else "UPDATE", collection, before, res.data)
        return self._existing(db, parent, collection, rid)  # as stored (an evaluation's datasets filled in)

    async def get(self, request: Request, parent: str, collection: str, rid: str | None) -> Any:
        assert rid is not None
        self.store.app(parent)
        with self.store.transaction() as db:
            text = self.store.text(db, parent, collection, rid, wants_enum_int(request))  # no data to read: only the answer
        if text is None:
            raise not_found(parent, collection, rid)
        return Response(text, media_type="application/json")

    async def patch(self, request: Request, parent: str, collection: str, rid: str | None) -> Any:
        assert rid is not None
        kind(collection)  # an unknown collection is refused before its body is read
        body, taught = self._split(collection, await json_body(request))
        paths = mask_paths(query(request).get("updateMask"), collection)
        whole = checked_parsed(collection, body) if paths is None else None
        incoming = whole.data if whole is not None else checked(collection, body, complete=False).data
        etag = (body.get("etag") or "") if etag_honoured(collection) else ""
        self.store.app(parent)
        with self.store.transaction(write=True) as db:
            current = self._existing(db, parent, collection, rid).data
            self._unlocked(db, parent)
            if collection == "tools":
                refuse_server_made(current)  # one made before (an import) is not writable either
            if etag and etag != current.get("etag"):
                raise RpcError("ABORTED", f"etag mismatch for {current['name']}: it was changed since it was read")
            known, unknown = split_known(collection, current)
            parsed, nested = self._masked(collection, known, whole, incoming, taught, paths)
            data = server_fields(collection, parent, rid, dict(parsed.data), current.get("createTime"))
            data = without_input_only(collection, data)
            res = self._write(db, request, parent, collection, rid, data, nested, before=current, carried=unknown)
        return answer(request, res)

    async def delete(self, request: Request, parent: str, collection: str, rid: str | None) -> Any:
        assert rid is not None
        q = query(request)
        etag, force = q.get("etag") or "", q.get("force", "").lower() == "true"
        if "force" in q and not force_allowed(collection):
            raise unbound_force(collection)
        self.store.app(parent)
        with self.store.transaction(write=True) as db:
            current = self._existing(db, parent, collection, rid).data
            self._unlocked(db, parent)
            if "systemTool" in current:
                raise RpcError("FAILED_PRECONDITION", f"{current['name']} is a system tool and cannot be deleted")
            if etag and etag != current.get("etag"):
                raise RpcError("ABORTED", f"etag mismatch for {current['name']}: it was changed since it was read")
            users = self._referrers(db, parent, current["name"])
            if users and not (force and force_allowed(collection)):
                how = "remove the references or delete with force=true" if force_allowed(collection) else "change them first"
                raise RpcError("FAILED_PRECONDITION", f"{current['name']} is referenced by {_who(users)}; {how}")
            self._unreference(db, parent, current["name"], users)
            self.store.delete(db, parent, collection, rid)
            evaluation_kinds.after_delete(self.store, db, parent, collection, current["name"])
            self._log(db, request, parent, "DELETE", collection, current, None)
        return {}

    def _unique_display_name(self, db: Any, parent: str, collection: str, data: dict[str, Any], rid: str) -> None:
        name = data.get("displayName")
        if kind(collection).unique_display_name and name and self.store.display_name_taken(db, parent, collection, name, rid):
            raise RpcError("ALREADY_EXISTS", f"a {kind(collection).words} with displayName '{name}' already exists in the app")
