"""The emulator's HTTP surface: the CES REST API (``/v1/`` and ``/v1beta/``), plus /admin.

One Starlette app serves both ways: over a socket through uvicorn
(``cesync emulator``) and in process through ``httpx.ASGITransport`` (the embedded
backend). Routing is by regular expression because resource names hold slashes
and custom methods hold colons. ``/v1beta/`` serves the same resources as ``/v1/``
(the v1beta messages are v1's plus the app's evaluationSettings and
evaluationPersonas, checked against v1beta's App on /v1beta/ only, see
_beta_fields); long-running operations name their payload types in the version
they were asked in.
"""

from __future__ import annotations

import base64
import json
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from google.protobuf import json_format
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..api import behaviour as fb
from ..api import descriptors as api
from .archive import ARCHIVED, pack, unpack
from .errors import RpcError
from .execute import Executor
from .faults import FaultConfig, FaultMiddleware
from .openapi import HTTP_METHODS, parse_document
from .operations import DEFAULT_DELAY as DEFAULT_OPERATION_DELAY
from .operations import Action, Operations
from .quota import READ_METRIC, WRITE_METRIC, QuotaConfig, QuotaMiddleware, QuotaState
from .resources import COLLECTIONS, REFERRERS, drop_references, reference_values, references
from .schemas import tool_schemas, toolset_tool_schemas
from .store import (
    DEFAULT_PAGE,
    MAX_PAGE,
    Store,
    app_data,
    first_function,
    new_etag,
    now,
    page_token,
    parse_page_token,
)
from .wire import (
    TOOL_TYPES,
    Extra,
    Parsed,
    Printed,
    checked,
    etag_honoured,
    extras,
    graft,
    kind,
    map_references,
    mask_paths,
    printed,
    split_known,
    to_data,
    without,
    without_input_only,
)

__all__ = ["create_app"]

APP_RE = re.compile(r"^(projects/[^/]+/locations/[^/]+/apps/[^/:]+)(.*)\Z")
LOCATION_RE = re.compile(r"^(projects/[^/]+/locations/[^/]+)/(apps|operations)(.*)\Z")
ID_RE = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_-]{0,127}\Z")
VERSIONS = ("v1", "v1beta")
MAX_PERSONAS = 30  # v1beta App.evaluation_personas: "Maximum of 30 personas can be defined." (google-cloud-ces)
Extras = list[Extra]  # module names: inside Emulator, "list" is its list method
Paths = list[str] | None
Handler = Callable[[Request, str, str, str | None], Awaitable[Any]]


def _query(request: Request) -> dict[str, str]:
    """The query's parameters as Starlette reads them (the last of a repeated one wins)."""
    return dict(request.query_params)


def _enum_int(request: Request) -> bool:
    return "enum-encoding=int" in _query(request).get("$alt", "")


def _version(request: Request) -> str:
    return str(request.scope.get("ces_version", "v1"))


def _answer(request: Request, res: Printed) -> Response:
    return Response(res.text(_enum_int(request)), media_type="application/json")


async def _json_body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw:
        return {}
    try:
        body = json.loads(raw)
    except ValueError:
        raise RpcError("INVALID_ARGUMENT", "Invalid JSON payload received.") from None
    if not isinstance(body, dict):
        raise RpcError("INVALID_ARGUMENT", "Invalid JSON payload received: expected an object.")
    return body


def _request(message: str, body: dict[str, Any]) -> dict[str, Any]:
    """A request message's body checked by protobuf (unknown fields, types), as proto3 JSON."""
    msg = api.message_class(f"{api.PACKAGE}.{message}")()
    try:
        json_format.ParseDict(body, msg, descriptor_pool=api.pool())
    except json_format.ParseError as exc:
        raise RpcError("INVALID_ARGUMENT", f"invalid {message}: {exc}") from None
    return to_data(msg)


def _apply_mask(stored: dict[str, Any], body: dict[str, Any], paths: list[str]) -> dict[str, Any]:
    merged: dict[str, Any] = json.loads(json.dumps(stored))
    for path in paths:
        parts = path.split(".")
        src: Any = body
        for part in parts:
            src = src.get(part) if isinstance(src, dict) else None
        dst = merged
        for part in parts[:-1]:
            nxt = dst.get(part)
            if not isinstance(nxt, dict):
                if src is None:
                    break
                nxt = dst[part] = {}
            dst = nxt
        else:
            if src is None:
                dst.pop(parts[-1], None)
            else:
                dst[parts[-1]] = src
    return merged


def _beta_update(data: dict[str, Any], sent: dict[str, Any], paths: list[str], *, replace: bool) -> dict[str, Any]:
    """The app's v1beta-only fields after an update: what the mask names comes from the request, and
    all of them without a mask on /v1beta/; the rest as stored (an update on /v1/ leaves them)."""
    names = set(api.beta_only_app_fields().values())
    stored = {k: data.pop(k) for k in list(data) if k in names}
    if replace:
        stored = {k: v for k, v in sent.items() if v is not None}
    elif paths:
        stored = _apply_mask(stored, sent, paths)
    return {**data, **stored}


def _with_extras(data: dict[str, Any], found: list[Extra]) -> dict[str, Any]:
    """data (a copy, when there is anything to put back) with these fields where they were."""
    return graft(json.loads(json.dumps(data)), found) if found else data


def _stamp(data: dict[str, Any], name: str, created: str | None) -> dict[str, Any]:
    data["name"] = name
    stamp = now()
    data["createTime"] = created or stamp
    data["updateTime"] = stamp
    data["etag"] = new_etag()
    return data


def _server_fields(collection: str, parent: str, rid: str, data: dict[str, Any], created: str | None) -> dict[str, Any]:
    """What the server sets on every write: name, times, etag, a tool's display name, docstring description."""
    _stamp(data, f"{parent}/{collection}/{rid}", created)
    if collection == "tools":
        tool_kind = next((t for t in TOOL_TYPES if t in data), None)
        member = dict(data.get(tool_kind, {})) if tool_kind else {}  # a copy: the parsed body's data stays as parsed
        if tool_kind:
            data[tool_kind] = member
        if tool_kind == "pythonFunction":
            fname, doc = first_function(member.get("pythonCode", ""))
            if not member.get("name") and fname:
                member["name"] = fname
            if doc:
                member["description"] = doc.strip()
            else:
                member.pop("description", None)
        data["displayName"] = member.get("name") or rid
    elif collection == "toolsets":
        data.setdefault("displayName", rid)
    return data


def _checked(collection: str, body: dict[str, Any]) -> dict[str, Any]:
    """A request body as the server stores it (proto3 JSON of the parsed message), or INVALID_ARGUMENT."""
    return _checked_parsed(collection, body).data


def _checked_parsed(collection: str, body: dict[str, Any]) -> Parsed:
    """_checked, with the message it printed (a write prints its resource from it: see wire.printed)."""
    parsed = checked(collection, body)
    if collection == "tools":
        _refuse_server_made(parsed.data)
    return parsed


def _beta_fields(request: Request, body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """An App body on /v1beta/: (its v1 part, its v1beta-only fields checked against v1beta's App, in
    JSON names, defaults omitted). On /v1/ the body is v1's: those fields are unknown names there."""
    names = api.beta_only_app_fields()
    if _version(request) != "v1beta" or not any(k in names for k in body):
        return body, {}
    sent = {k: v for k, v in body.items() if k in names}
    message = api.beta_app_class()()
    try:
        json_format.ParseDict(sent, message, descriptor_pool=api.beta_pool())
    except json_format.ParseError as exc:
        violation = {"field": "app", "description": str(exc)}
        raise RpcError(
            "INVALID_ARGUMENT",
            f"invalid app: {exc}",
            details=[{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [violation]}],
        ) from None
    if len(getattr(message, "evaluation_personas")) > MAX_PERSONAS:  # noqa: B009 (a message class made at run time)
        raise RpcError("INVALID_ARGUMENT", f"invalid app: at most {MAX_PERSONAS} evaluationPersonas can be defined")
    checked = json_format.MessageToDict(message)
    return {k: v for k, v in body.items() if k not in names}, {names[k]: checked.get(names[k]) for k in sent}


def _beta_mask(request: Request) -> tuple[str | None, list[str]]:
    """updateMask on /v1/ as it is; on /v1beta/ split into the v1 part and the v1beta-only App paths
    (checked against v1beta's App, in JSON names)."""
    raw = _query(request).get("updateMask")
    if raw is None or _version(request) != "v1beta":
        return raw, []
    names = api.beta_only_app_fields()
    mine = [p.strip() for p in raw.split(",") if p.strip().split(".")[0] in names]
    if not mine:
        return raw, []
    rest = ",".join(p for p in raw.split(",") if p.strip() and p.strip() not in mine)
    paths = []
    for path in mine:
        desc: Any = api.beta_app_class().DESCRIPTOR
        parts = []
        for part in path.split("."):
            f = None
            if desc is not None:
                f = desc.fields_by_name.get(part) or next((x for x in desc.fields if x.json_name == part), None)
            if f is None:
                raise RpcError("INVALID_ARGUMENT", f"invalid update_mask path '{path}': no field '{part}' in app")
            parts.append(f.json_name)
            desc = f.message_type if f.message_type is not None and not f.is_repeated else None
        paths.append(".".join(parts))
    return rest or "-", paths  # "-": the mask names v1beta fields only (nothing of v1's)


def _without_beta(request: Request, res: Printed) -> Response:
    """An app answer: on /v1/, without the fields only v1beta's App has."""
    names = api.beta_only_app_fields()
    if _version(request) == "v1beta" or not any(k in res.data for k in names):
        return _answer(request, res)
    data = json.loads(res.text(_enum_int(request)))
    return JSONResponse({k: v for k, v in data.items() if k not in names})


# Tool types CreateTool and UpdateTool refuse: api.behaviour's READ_ONLY rules (Terraform
# mmv1/products/ces/Tool.yaml: docs.note "cannot be created, updated, or managed directly" and
# `output: true`; google-cloud-ces Tool.mcp_tool "cannot be created or updated directly"). The
# wording of the real refusal is not documented: the message is the emulator's own.
def _refuse_server_made(data: dict[str, Any]) -> None:
    member = next((t for t in fb.fields("Tool", fb.READ_ONLY) if t in data), None)
    if member is not None:
        made_by = fb.rule("Tool", member, fb.READ_ONLY).detail
        why = (
            f"it is generated from a {made_by}; create the toolset instead" if made_by else "CES makes tools of this type itself"
        )
        raise RpcError("INVALID_ARGUMENT", f"{member} cannot be created or updated directly: {why}")


def _page_args(request: Request, key: str) -> tuple[int, int]:
    q = _query(request)
    try:
        size = int(q.get("pageSize") or DEFAULT_PAGE)
    except ValueError:
        raise RpcError("INVALID_ARGUMENT", "pageSize must be an integer") from None
    if size < 0:
        raise RpcError("INVALID_ARGUMENT", "pageSize must not be negative")
    offset = parse_page_token(q["pageToken"], key) if q.get("pageToken") else 0
    return offset, min(size or DEFAULT_PAGE, MAX_PAGE)


def _force_allowed(collection: str) -> bool:
    """Whether the Delete request of this kind has ``force`` (a version in use cannot be forced away)."""
    return fb.delete_has_force(kind(collection).message)


def _unbound_force(collection: str) -> RpcError:
    """A query parameter binds to a field of the request message (google/api/http.proto: fields not
    bound by the path "automatically become HTTP query parameters"); DeleteDeploymentRequest,
    DeleteExampleRequest and DeleteAppVersionRequest have no ``force``, so there is nothing to bind it
    to. The wording is what Google's front end answers for an unbindable parameter (seen on Google
    APIs; none of our stored sources quotes it for CES)."""
    return RpcError(
        "INVALID_ARGUMENT",
        'Invalid JSON payload received. Unknown name "force": Cannot bind query parameter. '
        f"Field 'force' could not be found in request message Delete{kind(collection).message}Request.",
        details=[
            {
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [{"field": "force", "description": 'Invalid JSON payload received. Unknown name "force"'}],
            }
        ],
    )


# What the emulator fills in for a field the server defaults (fb.SERVER_DEFAULTED) when a write
# leaves it out. The real value is not documented (Terraform says only `default_from_api`): this
# one is the emulator's own, present and non-empty so that a client that plans it away shows.
SERVER_DEFAULT_VALUES: dict[tuple[str, str], dict[str, Any]] = {
    ("App", "loggingSettings"): {"conversationLoggingSettings": {}, "cloudLoggingSettings": {}},
}


def _server_defaults(collection: str, data: dict[str, Any]) -> dict[str, Any]:
    message = kind(collection).message
    for name in fb.fields(message, fb.SERVER_DEFAULTED):
        if name not in data:
            data[name] = json.loads(json.dumps(SERVER_DEFAULT_VALUES[(message, name)]))
    return data


def _locked(app: dict[str, Any]) -> bool:
    return any(app.get(name) is True for name in fb.fields("App", fb.APP_LOCK))


def _locked_error(parent: str) -> RpcError:
    # App.locked (app.proto): "If the app is locked, modifications to the app resources will be
    # rejected." The status code is not stated: FAILED_PRECONDITION is AIP-193's for a request the
    # resource's state forbids. Which writes count is not stated either: the emulator refuses every
    # write that changes the app or what it holds (creating an app version, a copy, is allowed), except
    # the UpdateApp that unlocks it and an ImportApp with ignoreAppLock (ImportAppRequest.ignore_app_lock).
    return RpcError(
        "FAILED_PRECONDITION",
        f"app {parent} is locked (App.locked is true): modifications to the app's resources are rejected; "
        "unlock it first (UpdateApp with locked: false)",
    )


class Emulator:
    def __init__(
        self, store: Store, operation_delay: float = DEFAULT_OPERATION_DELAY, operation_clock: Callable[[], float] = time.time
    ) -> None:
        self.store = store
        self.executor = Executor(self._read_copy, self._tools_copy)
        actions: dict[str, Action] = {
            "create_app": self._do_create_app,
            "delete_app": self._do_delete_app,
            "import_app": self._do_import_app,
            "restore": self._do_restore,
        }
        self.operations = Operations(store, actions, operation_delay, operation_clock)
        # Fields a newer CES has and the snapshot lacks, as (message, JSON name), taught by /admin/inject:
        # this server then stores them wherever they sit, returns them, and takes them in requests.
        self.taught: set[tuple[str, str]] = set()
        self.quota = QuotaConfig()  # the settings (create_app, /admin/quota)
        self.quota_state = QuotaState()  # the buckets per project and location, and what they refused

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
            raise _not_found(parent, collection, rid)
        return found

    def _existing_app(self, db: Any, parent: str) -> Printed:
        found = self.store.get_app(db, parent)
        if found is None:
            raise RpcError("NOT_FOUND", f"app {parent} not found")
        return found

    def _unlocked(self, db: Any, parent: str) -> None:
        """FAILED_PRECONDITION when the app is locked (see _locked_error)."""
        app = self.store.get_app(db, parent)
        if app is not None and _locked(app.data):
            raise _locked_error(parent)

    # --- references ----------------------------------------------------------------------

    def _check_references(self, db: Any, parent: str, singular: str, data: dict[str, Any]) -> None:
        """Every resource of the app a write names must exist (so an apply creates what is named first).

        A tool's own reference (``agentTool.agent``) is not checked: tools come first in
        every apply order, before the agents they may hand over to.
        """
        violations = self._malformed_references(parent, singular, data)
        if singular in ("tool", "toolset"):
            self._refuse(singular, violations)
            return
        message = "App" if singular == "app" else next(c.message for c in COLLECTIONS.values() if c.singular == singular)
        for path, name, collection, rid in references(data, parent):
            if fb.name_unchecked(message, path):
                continue  # CES accepts a name of nothing here (api.behaviour NAME_UNCHECKED cites the sample)
            if name != data.get("name") and self.store.get(db, parent, collection, rid) is None:
                at = singular + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
                violations.append({"field": at, "description": f"{name} does not exist"})
        self._refuse(singular, violations)

    @staticmethod
    def _malformed_references(parent: str, singular: str, data: dict[str, Any]) -> list[dict[str, str]]:
        """A resource-reference field (REFERENCE_FIELDS) must hold a full name of this app's resource
        of the referenced type (``versions/-``, the draft, included): a bare id or ``tools/x`` is refused."""
        collection = "apps" if singular == "app" else next(c.name for c in COLLECTIONS.values() if c.singular == singular)
        found = []
        for path, value, wanted in reference_values(collection, data):
            prefix = f"{parent}/{wanted}/"
            rid = value[len(prefix) :] if value.startswith(prefix) else ""
            if rid and "/" not in rid:
                continue
            if wanted == "tools" and re.fullmatch(re.escape(parent) + r"/toolsets/[^/]+/tools/[^/]+", value):
                continue  # a toolset's tool (``{toolset}/tools/{id}``) is a tool too
            at = singular + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
            found.append({"field": at, "description": f"{value!r} is not the name of a {wanted[:-1]} of {parent}"})
        return found

    @staticmethod
    def _refuse(singular: str, violations: list[dict[str, str]]) -> None:
        if violations:
            raise RpcError(
                "INVALID_ARGUMENT",
                f"invalid {singular}: " + "; ".join(f"{v['field']}: {v['description']}" for v in violations),
                details=[{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": violations}],
            )

    def _referrers(self, db: Any, parent: str, target: str) -> list[tuple[str, str, dict[str, Any]]]:
        """(collection or 'apps', id, data) of everything naming ``target``."""
        found: list[tuple[str, str, dict[str, Any]]] = []
        app = self.store.get_app(db, parent)
        candidates = [("apps", "", app.data)] if app is not None else []
        candidates += [c for c in self.store.mentioning(db, parent, target) if c[0] in REFERRERS]
        for collection, rid, data in candidates:
            if data.get("name") == target:
                continue
            if any(n == target or n.startswith(f"{target}/tools/") for _, n, _, _ in references(data, parent)):
                found.append((collection, rid, data))
        return found

    def _unreference(self, db: Any, parent: str, target: str, users: list[tuple[str, str, dict[str, Any]]]) -> None:
        for collection, rid, data in users:
            changed = drop_references(data, target)
            changed["updateTime"], changed["etag"] = now(), new_etag()
            if collection == "examples":
                # Example.invalid (output only): "The example may become invalid if referencing resources
                # are deleted. Invalid examples will not be used as few-shot examples." (google-cloud-ces)
                changed["invalid"] = True
            if collection == "apps":
                self.store.put_app(db, parent, printed("apps", changed))
            else:
                self.store.put(db, parent, collection, rid, printed(collection, changed))

    # --- changelogs ------------------------------------------------------------------------

    def _log(
        self,
        db: Any,
        request: Request,
        parent: str,
        action: str,
        collection: str,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
    ) -> None:
        """A Changelog of one write (google.cloud.ces.v1.Changelog: author, displayName, description,
        resource, resourceType, action, originalResource, newResource, createTime, sequenceNumber).

        The proto documents the fields, not their values: the action words (CREATE, UPDATE,
        DELETE), the resource type (the resource's message name) and the description's wording
        ("changed fields") are the emulator's own. The author is the caller's identity: the
        emulator takes any bearer token, and one that is an e-mail address names a test identity
        (anonymous callers are emulator@cesync.local, as the app versions' creator).
        """
        if collection == "versions":
            return
        seq = int(self.store.next_id(db, parent, "changelog").rsplit("-", 1)[-1])
        cid = f"changelog-{seq:06d}"
        resource = after or before or {}
        server = {"name", "etag", "createTime", "updateTime"}
        changed = sorted(k for k in {*(before or {}), *(after or {})} - server if (before or {}).get(k) != (after or {}).get(k))
        data: dict[str, Any] = {
            "name": f"{parent}/changelogs/{cid}",
            "author": _author(request),
            "displayName": str(resource.get("displayName") or str(resource.get("name", "")).rsplit("/", 1)[-1]),
            "description": ", ".join(changed) if action == "UPDATE" else action.lower(),
            "resource": str(resource.get("name", parent)),
            "resourceType": "App" if collection == "apps" else COLLECTIONS[collection].message,
            "action": action,
            "createTime": now(),
            "sequenceNumber": str(seq),
        }
        if before is not None:
            data["originalResource"] = before
        if after is not None:
            data["newResource"] = after
        text = json.dumps(data, separators=(",", ":"))
        self.store.put(db, parent, "changelogs", cid, Printed(data, text, text))

    async def list_changelogs(self, request: Request, parent: str, collection: str, _: str | None) -> Any:
        """ListChangelogs, newest first (sequence numbers only grow); pageSize and pageToken as every list."""
        offset, size = _page_args(request, f"{parent}|changelogs")
        self.store.app(parent)
        with self.store.transaction() as db:
            self._existing_app(db, parent)
            rows, total = self.store.page(
                db, parent, "changelogs", system=True, by_time=False, desc=True, offset=offset, size=size
            )
        text = '{"changelogs":[' + ",".join(r[0] for r in rows) + "]"
        if offset + size < total:
            text += f',"nextPageToken":{json.dumps(page_token(offset + size, f"{parent}|changelogs"))}'
        return Response(text + "}", media_type="application/json")

    async def get_changelog(self, request: Request, parent: str, collection: str, rid: str | None) -> Any:
        assert rid is not None
        self.store.app(parent)
        with self.store.transaction() as db:
            text = self.store.text(db, parent, "changelogs", rid, False)
        if text is None:
            raise RpcError("NOT_FOUND", f"changelog {parent}/changelogs/{rid} not found")
        return Response(text, media_type="application/json")

    # --- collection calls ----------------------------------------------------------------

    async def list(self, request: Request, parent: str, collection: str, _: str | None) -> Any:
        q = _query(request)
        flt = (q.get("filter") or "").replace(" ", "")
        allowed = ("", "include_system_tools=true", "include_system_tools=false") if collection == "tools" else ("",)
        if flt not in allowed:
            raise RpcError("INVALID_ARGUMENT", f"unsupported filter '{q.get('filter')}'")
        order = (q.get("orderBy") or "name").strip()
        field, _, direction = order.partition(" ")
        if field not in ("name", "create_time") or direction not in ("", "asc", "desc"):
            raise RpcError("INVALID_ARGUMENT", f"unsupported orderBy '{order}': use name or create_time")
        key = f"{parent}|{collection}|{flt}|{order}"
        offset, size = _page_args(request, key)
        self.store.app(parent)
        with self.store.transaction() as db:
            rows, total = self.store.page(
                db,
                parent,
                collection,
                system=collection != "tools" or flt == "include_system_tools=true",
                by_time=field == "create_time",
                desc=direction == "desc",
                offset=offset,
                size=size,
            )
        enum_int = _enum_int(request)
        field_name = "appVersions" if collection == "versions" else collection
        text = f'{{"{field_name}":[' + ",".join(r[1] if enum_int else r[0] for r in rows) + "]"
        if offset + size < total:
            text += f',"nextPageToken":{json.dumps(page_token(offset + size, key))}'
        return Response(text + "}", media_type="application/json")

    def _new_id(self, request: Request, collection: str) -> str | None:
        rid = _query(request).get(kind(collection).id_param)
        if rid is not None and not ID_RE.match(rid):
            raise RpcError("INVALID_ARGUMENT", f"invalid {kind(collection).id_param} '{rid}'")
        return rid

    async def create(self, request: Request, parent: str, collection: str, _: str | None) -> Any:
        if collection == "versions":
            return await self.create_version(request, parent)
        c = kind(collection)
        body, taught = self._split(collection, await _json_body(request))
        parsed = _checked_parsed(collection, body)
        rid = self._new_id(request, collection)
        self.store.app(parent)
        with self.store.transaction(write=True) as db:
            self._unlocked(db, parent)
            if rid is None:
                rid = self.store.next_id(db, parent, c.singular)
            if self.store.get(db, parent, collection, rid) is not None:
                raise RpcError("ALREADY_EXISTS", f"{c.words} {parent}/{collection}/{rid} already exists")
            data = without_input_only(collection, _server_fields(collection, parent, rid, dict(parsed.data), None))
            self._unique_display_name(db, parent, collection, data, rid)
            self._check_references(db, parent, c.singular, data)
            res = printed(collection, _with_extras(data, taught))
            self.store.put(db, parent, collection, rid, res)
            self._log(db, request, parent, "CREATE", collection, None, res.data)
        return _answer(request, res)

    # --- resource calls ------------------------------------------------------------------

    async def get(self, request: Request, parent: str, collection: str, rid: str | None) -> Any:
        assert rid is not None
        self.store.app(parent)
        with self.store.transaction() as db:
            text = self.store.text(db, parent, collection, rid, _enum_int(request))  # no data to read: only the answer
        if text is None:
            raise _not_found(parent, collection, rid)
        return Response(text, media_type="application/json")

    async def patch(self, request: Request, parent: str, collection: str, rid: str | None) -> Any:
        assert rid is not None
        c = kind(collection)
        body, taught = self._split(collection, await _json_body(request))
        paths = mask_paths(_query(request).get("updateMask"), collection)
        whole = _checked_parsed(collection, body) if paths is None else None
        incoming = whole.data if whole is not None else checked(collection, body, complete=False).data
        etag = (body.get("etag") or "") if etag_honoured(collection) else ""
        self.store.app(parent)
        with self.store.transaction(write=True) as db:
            current = self._existing(db, parent, collection, rid).data
            self._unlocked(db, parent)
            if collection == "tools":
                _refuse_server_made(current)  # one made before (an import) is not writable either
            if etag and etag != current.get("etag"):
                raise RpcError("ABORTED", f"etag mismatch for {current['name']}: it was changed since it was read")
            known, unknown = split_known(collection, current)
            parsed, nested = self._masked(collection, known, whole, incoming, taught, paths)
            data = _server_fields(collection, parent, rid, dict(parsed.data), current.get("createTime"))
            data = without_input_only(collection, data)
            self._unique_display_name(db, parent, collection, data, rid)
            self._check_references(db, parent, c.singular, data)
            data.update(unknown)  # fields this emulator was taught out of band survive
            res = printed(collection, _with_extras(data, nested))
            self.store.put(db, parent, collection, rid, res)
            self._log(db, request, parent, "UPDATE", collection, current, res.data)
        return _answer(request, res)

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
        merged = _apply_mask(known, _with_extras(incoming, taught), paths or [])
        nested = extras(collection, merged) if self.taught else []
        return _checked_parsed(collection, without(merged, nested) if nested else merged), nested

    async def delete(self, request: Request, parent: str, collection: str, rid: str | None) -> Any:
        assert rid is not None
        q = _query(request)
        etag, force = q.get("etag") or "", q.get("force", "").lower() == "true"
        if "force" in q and not _force_allowed(collection):
            raise _unbound_force(collection)
        self.store.app(parent)
        with self.store.transaction(write=True) as db:
            current = self._existing(db, parent, collection, rid).data
            self._unlocked(db, parent)
            if "systemTool" in current:
                raise RpcError("FAILED_PRECONDITION", f"{current['name']} is a system tool and cannot be deleted")
            if etag and etag != current.get("etag"):
                raise RpcError("ABORTED", f"etag mismatch for {current['name']}: it was changed since it was read")
            users = self._referrers(db, parent, current["name"])
            if users and not (force and _force_allowed(collection)):
                how = "remove the references or delete with force=true" if _force_allowed(collection) else "change them first"
                raise RpcError("FAILED_PRECONDITION", f"{current['name']} is referenced by {_who(users)}; {how}")
            self._unreference(db, parent, current["name"], users)
            self.store.delete(db, parent, collection, rid)
            self._log(db, request, parent, "DELETE", collection, current, None)
        return {}

    async def retrieve_tools(self, request: Request, parent: str, collection: str, rid: str | None) -> Any:
        assert rid is not None
        body = await _json_body(request)
        wanted = body.get("toolIds") or []
        self.store.app(parent)
        with self.store.transaction() as db:
            toolset = self._existing(db, parent, "toolsets", rid).data
        tools = [t for t in _derived_tools(toolset) if not wanted or t["name"].rsplit("/", 1)[-1] in wanted]
        enum_int = _enum_int(request)
        text = '{"tools":[' + ",".join(printed("tools", t).text(enum_int) for t in tools) + "]}"
        return Response(text, media_type="application/json")

    def _unique_display_name(self, db: Any, parent: str, collection: str, data: dict[str, Any], rid: str) -> None:
        name = data.get("displayName")
        if kind(collection).unique_display_name and name and self.store.display_name_taken(db, parent, collection, name, rid):
            raise RpcError("ALREADY_EXISTS", f"a {kind(collection).words} with displayName '{name}' already exists in the app")

    # --- app versions ----------------------------------------------------------------------

    async def create_version(self, request: Request, parent: str) -> Any:
        data = _checked("versions", await _json_body(request))
        rid = self._new_id(request, "versions")
        self.store.app(parent)
        with self.store.transaction(write=True) as db:
            res = self._new_version(db, parent, rid, data)
        return _answer(request, res)

    def _new_version(self, db: Any, parent: str, rid: str | None, data: dict[str, Any]) -> Printed:
        """An app version of the draft as it is now (server-assigned id when rid is None)."""
        if rid is None:
            rid = self.store.next_id(db, parent, "version")
        if self.store.get(db, parent, "versions", rid) is not None:
            raise RpcError("ALREADY_EXISTS", f"app version {parent}/versions/{rid} already exists")
        data = _stamp(data, f"{parent}/versions/{rid}", None)
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

    # --- apps ------------------------------------------------------------------------------

    async def list_apps(self, request: Request, location: str) -> Any:
        offset, size = _page_args(request, f"{location}|apps")
        with self.store.transaction() as db:
            apps = self.store.list_apps(db, location)
        shown = [bytes(_without_beta(request, a).body).decode() for a in apps[offset : offset + size]]
        text = '{"apps":[' + ",".join(shown) + "]"
        if offset + size < len(apps):
            text += f',"nextPageToken":{json.dumps(page_token(offset + size, f"{location}|apps"))}'
        return Response(text + "}", media_type="application/json")

    async def create_app(self, request: Request, location: str) -> Any:
        body, beta = _beta_fields(request, await _json_body(request))
        data = _checked("apps", body)
        data.update({k: v for k, v in beta.items() if v is not None})
        rid = _query(request).get("appId") or f"app-{uuid.uuid4().hex[:12]}"
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
        res = printed("apps", _server_defaults("apps", app_data(parent, data)))
        self.store.create_app(db, parent, res)
        return res.data

    async def get_app(self, request: Request, parent: str) -> Any:
        self.store.app(parent)
        with self.store.transaction() as db:
            return _without_beta(request, self._existing_app(db, parent))

    async def patch_app(self, request: Request, parent: str) -> Any:
        v1_body, beta = _beta_fields(request, await _json_body(request))
        body, taught = self._split("apps", v1_body)
        raw_mask, beta_paths = _beta_mask(request)
        paths = [] if raw_mask == "-" else mask_paths(raw_mask, "apps")
        whole = _checked_parsed("apps", body) if paths is None else None
        incoming = whole.data if whole is not None else checked("apps", body, complete=False).data
        etag = (body.get("etag") or "") if etag_honoured("apps") else ""  # App.etag is OUTPUT_ONLY: ignored
        self.store.app(parent)
        with self.store.transaction(write=True) as db:
            current = self._existing_app(db, parent).data
            if etag and etag != current.get("etag"):
                raise RpcError("ABORTED", f"etag mismatch for {parent}: it was changed since it was read")
            known, unknown = split_known("apps", current)
            parsed, nested = self._masked("apps", known, whole, incoming, taught, paths)
            data = _server_defaults("apps", _stamp(dict(parsed.data), parent, current.get("createTime")))
            if _locked(current) and _locked(data):
                raise _locked_error(parent)  # only the update that unlocks a locked app passes
            self._check_references(db, parent, "app", data)
            data.update(unknown)
            data = _beta_update(data, beta, beta_paths, replace=paths is None and _version(request) == "v1beta")
            res = printed("apps", _with_extras(data, nested))
            self.store.put_app(db, parent, res)
            self._log(db, request, parent, "UPDATE", "apps", current, res.data)
        return _without_beta(request, res)

    async def delete_app(self, request: Request, parent: str) -> Any:
        etag = _query(request).get("etag") or ""
        with self.store.transaction() as db:
            current = self._existing_app(db, parent).data
        if _locked(current):
            raise _locked_error(parent)
        if etag and etag != current.get("etag"):
            raise RpcError("ABORTED", f"etag mismatch for {parent}: it was changed since it was read")
        return self._start(request, parent.rsplit("/apps/", 1)[0], {"do": "delete_app", "parent": parent})

    def _do_delete_app(self, db: Any, parent: str) -> dict[str, Any]:
        self._existing_app(db, parent)
        self.store.delete_app(db, parent)
        return {}

    # --- export and import -------------------------------------------------------------------

    async def export_app(self, request: Request, parent: str) -> Any:
        body = _request("ExportAppRequest", {**await _json_body(request), "name": parent})
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
        resources = {c: {d["name"].rsplit("/", 1)[-1]: d for d in snapshot.get(c, [])} for c in ARCHIVED}
        content = pack({**snapshot["app"], "name": parent}, resources, yaml=fmt == "YAML")
        response = {"appContent": base64.b64encode(content).decode()}
        return self._start(request, parent.rsplit("/apps/", 1)[0], {"do": "done", "response": response}, "ExportAppResponse")

    async def import_app(self, request: Request, location: str) -> Any:
        body = _request("ImportAppRequest", {**await _json_body(request), "parent": location})
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
            if existing is not None and _locked(existing.data):
                raise _locked_error(f"{location}/apps/{rid}")
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
        for collection in ARCHIVED:
            for folder, data in bundle.resources.get(collection, {}).items():
                try:
                    body = _checked(collection, map_references(collection, data, resolve(warnings, f"{collection}/{folder}")))
                except RpcError as exc:
                    warnings.append(f"{collection}/{folder}: {exc.message}")
                    continue
                valid.setdefault(collection, {})[ids[collection][folder]] = body
        for collection, items in valid.items():
            for rid, body in items.items():
                old = self.store.get(db, parent, collection, rid)
                data = _server_fields(collection, parent, rid, body, old.data.get("createTime") if old else None)
                self.store.put(db, parent, collection, rid, printed(collection, data))
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
            fields = _checked("apps", {"displayName": app["displayName"], **settings})
        except RpcError as exc:
            warnings.append(f"app: {exc.message}")
            fields = {"displayName": app["displayName"]}
        self.store.put_app(db, parent, printed("apps", _stamp(fields, parent, app.get("createTime"))))
        return {"name": parent, **({"warnings": warnings} if warnings else {})}

    def _import_ids(
        self, db: Any, parent: str, resources: dict[str, dict[str, dict[str, Any]]], strategy: str
    ) -> dict[str, dict[str, str]]:
        """Which resource of the app each folder becomes: OVERWRITE empties the app first; REPLACE matches display names."""
        ids: dict[str, dict[str, str]] = {}
        for collection in ARCHIVED:
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

    # --- tools: execute and schemas ----------------------------------------------------------------

    async def retrieve_tool_schema(self, request: Request, parent: str) -> Any:
        body = _request("RetrieveToolSchemaRequest", {**await _json_body(request), "parent": parent})
        self.store.app(parent)
        out: dict[str, Any]
        with self.store.transaction() as db:
            if body.get("tool"):
                tool_parent, _, rid = str(body["tool"]).rpartition("/tools/")
                if tool_parent != parent:
                    raise RpcError("INVALID_ARGUMENT", f"{body['tool']!r} is not a tool of {parent}")
                inp, outp = tool_schemas(self._existing(db, parent, "tools", rid).data)
                out = {"tool": body["tool"]}
            elif body.get("toolsetTool"):
                ref = body["toolsetTool"]
                ts_parent, _, ts_id = str(ref.get("toolset", "")).rpartition("/toolsets/")
                if ts_parent != parent:
                    raise RpcError("INVALID_ARGUMENT", f"{ref.get('toolset')!r} is not a toolset of {parent}")
                inp, outp = toolset_tool_schemas(self._existing(db, parent, "toolsets", ts_id).data, str(ref.get("toolId", "")))
                out = {"toolsetTool": ref}
            else:
                raise RpcError("INVALID_ARGUMENT", "set exactly one of tool or toolsetTool")
        out.update(inputSchema=inp, outputSchema=outp)
        return _request("RetrieveToolSchemaResponse", out)

    # --- long-running operations --------------------------------------------------------------------

    def _start(self, request: Request, location: str, action: dict[str, Any], response: str = "") -> Response:
        response = response or {"create_app": "App", "restore": "RestoreAppVersionResponse"}.get(action["do"], "Empty")
        return JSONResponse(self.operations.start(_version(request), location, action, response))

    async def get_operation(self, request: Request, name: str) -> Any:
        return self.operations.get(name)

    async def delete_operation(self, request: Request, name: str) -> Any:
        return self.operations.delete(name)

    async def list_operations(self, request: Request, location: str) -> Any:
        return self.operations.list(location)


_EMAIL = re.compile(r"^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9.-]{1,190}\Z")


def _author(request: Request) -> str:
    """The caller's identity: a bearer token that is an e-mail address (a test identity), else anonymous."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token if scheme.lower() == "bearer" and _EMAIL.match(token) else "emulator@cesync.local"


def _not_found(parent: str, collection: str, rid: str) -> RpcError:
    return RpcError("NOT_FOUND", f"{kind(collection).words} {parent}/{collection}/{rid} not found")


def _who(users: list[tuple[str, str, dict[str, Any]]]) -> str:
    """'agent(s) a, b and the app' for an error message."""
    groups: dict[str, list[str]] = {}
    for collection, rid, _ in users:
        groups.setdefault(collection, []).append(rid)
    parts = [f"{kind(c).words}(s) {', '.join(sorted(ids))}" for c, ids in sorted(groups.items()) if c != "apps"]
    if "apps" in groups:
        parts.append("the app")
    return " and ".join(parts)


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


def _derived_tools(toolset: dict[str, Any]) -> list[dict[str, Any]]:
    """The tools a toolset exposes, named {toolset}/tools/{id} (output only)."""
    base = toolset["name"]
    out: list[dict[str, Any]] = []
    if "openApiToolset" in toolset:
        try:
            doc = parse_document(toolset["openApiToolset"]["openApiSchema"])
        except ValueError:
            doc = {}
        for path, item in (doc.get("paths") or {}).items() if isinstance(doc, dict) else []:
            for method, op in (item or {}).items():
                if method in HTTP_METHODS and isinstance(op, dict):
                    tid = op.get("operationId") or f"{method}{path}".replace("/", "_")
                    out.append(
                        {"name": f"{base}/tools/{tid}", "displayName": tid, "openApiTool": {"name": tid, "openApiSchema": ""}}
                    )
    elif "mcpToolset" in toolset:
        for o in toolset["mcpToolset"].get("toolOverrides", []):
            out.append(
                {
                    "name": f"{base}/tools/{o['tool']}",
                    "displayName": o.get("nameOverride") or o["tool"],
                    "mcpTool": {"name": o["tool"], "serverAddress": toolset["mcpToolset"]["serverAddress"]},
                }
            )
    elif "connectorToolset" in toolset:
        conn = toolset["connectorToolset"]
        for i, action in enumerate(conn.get("connectorActions", [])):
            tid = action.get("connectionActionId") or f"{action.get('entityOperation', {}).get('entityId', 'entity')}_{i}"
            out.append(
                {
                    "name": f"{base}/tools/{tid}",
                    "displayName": tid,
                    "connectorTool": {"connection": conn["connection"], "action": action},
                }
            )
    return out


COLLECTION_GROUP = "(" + "|".join(COLLECTIONS) + ")"
WRITABLE_GROUP = "(" + "|".join(c for c in COLLECTIONS if c != "versions") + ")"
ROUTES: list[tuple[str, re.Pattern[str], str]] = [
    ("GET", re.compile(rf"^/{COLLECTION_GROUP}\Z"), "list"),
    ("POST", re.compile(rf"^/{COLLECTION_GROUP}\Z"), "create"),
    ("GET", re.compile(rf"^/{COLLECTION_GROUP}/([^/:]+)\Z"), "get"),
    ("PATCH", re.compile(rf"^/{WRITABLE_GROUP}/([^/:]+)\Z"), "patch"),
    ("DELETE", re.compile(rf"^/{COLLECTION_GROUP}/([^/:]+)\Z"), "delete"),
    ("POST", re.compile(r"^/(toolsets)/([^/:]+):retrieveTools\Z"), "retrieve_tools"),
    ("POST", re.compile(r"^/(versions)/([^/:]+):restore\Z"), "restore"),
    ("GET", re.compile(r"^/(changelogs)\Z"), "list_changelogs"),
    ("GET", re.compile(r"^/(changelogs)/([^/:]+)\Z"), "get_changelog"),
]
APP_METHODS = {
    ("GET", ""): "get_app",
    ("PATCH", ""): "patch_app",
    ("DELETE", ""): "delete_app",
    ("POST", ":exportApp"): "export_app",
    ("POST", ":retrieveToolSchema"): "retrieve_tool_schema",
}
LOCATION_METHODS = {
    ("GET", "apps", ""): "list_apps",
    ("POST", "apps", ""): "create_app",
    ("POST", "apps", ":importApp"): "import_app",
    ("GET", "operations", ""): "list_operations",
}
OPERATION_RE = re.compile(r"^/([^/:]+)(:cancel)?\Z")


async def _dispatch(emulator: Emulator, request: Request, path: str) -> Any:
    match = LOCATION_RE.match(path)
    if not match:
        raise RpcError("NOT_FOUND", f"unknown resource '{path}'")
    location, top, rest = match.groups()
    emulator.operations.settle_due()
    method = request.method
    name = LOCATION_METHODS.get((method, top, rest))
    if name is not None:
        return await getattr(emulator, name)(request, location)
    if top == "operations":
        op = OPERATION_RE.match(rest)
        if op is None:
            raise RpcError("NOT_FOUND", f"unknown resource '{path}'")
        full = f"{location}/operations/{op.group(1)}"
        if op.group(2) and method == "POST":
            return {}  # operations here finish on their own; cancelling one changes nothing, as CES may do
        if not op.group(2) and method in ("GET", "DELETE"):
            return await (emulator.get_operation if method == "GET" else emulator.delete_operation)(request, full)
        raise RpcError("NOT_FOUND", f"no method {method} {rest} on {location}/operations")
    app_match = APP_RE.match(path)
    if not app_match:
        raise RpcError("NOT_FOUND", f"no method {method} {rest or '/'} on {location}/{top}")
    parent, rest = app_match.groups()
    if rest == ":executeTool" and method == "POST":
        return await emulator.executor.execute(parent, await _json_body(request))
    name = APP_METHODS.get((method, rest))
    if name is not None:
        return await getattr(emulator, name)(request, parent)
    for route_method, pattern, handler_name in ROUTES:
        m = pattern.match(rest)
        if m and method == route_method:
            handler: Handler = getattr(emulator, handler_name)
            return await handler(request, parent, m.group(1), m.group(2) if m.lastindex and m.lastindex > 1 else None)
    raise RpcError("NOT_FOUND", f"no method {method} {rest or '/'} on {parent}")


def create_app(
    store: Store | None = None,
    faults: FaultConfig | None = None,
    *,
    operation_delay: float = DEFAULT_OPERATION_DELAY,
    quota: QuotaConfig | None = None,
    quota_clock: Callable[[], float] = time.monotonic,
    operation_clock: Callable[[], float] = time.time,
) -> Starlette:
    """The emulator as an ASGI app (state in memory unless the store has a file; no quota unless given)."""
    emulator = Emulator(store or Store(), operation_delay, operation_clock)
    if quota is not None:
        emulator.quota = quota
    fault_middleware: list[FaultMiddleware] = []

    def api_route(version: str) -> Callable[[Request], Awaitable[Response]]:
        async def api(request: Request) -> Response:
            request.scope["ces_version"] = version
            try:
                result = await _dispatch(emulator, request, request.path_params["path"])
                return result if isinstance(result, Response) else JSONResponse(result)
            except RpcError as exc:
                return JSONResponse(exc.body(), status_code=exc.http)

        return api

    async def admin(request: Request) -> Response:
        try:
            return JSONResponse(await _admin(emulator, request, fault_middleware))
        except RpcError as exc:
            return JSONResponse(exc.body(), status_code=exc.http)

    endpoints = {v: api_route(v) for v in VERSIONS}
    app = Starlette(
        routes=[
            *(Route(f"/{v}/{{path:path}}", endpoints[v], methods=list(API_METHODS)) for v in VERSIONS),
            Route("/admin/{action:path}", admin, methods=["GET", "POST"]),
        ]
    )
    app.state.emulator = emulator
    config = faults or FaultConfig()
    quota_state = emulator.quota_state  # inside the faults (the last added is outermost): refused after the latency
    app.add_middleware(QuotaMiddleware, config=emulator.quota, state=quota_state, clock=quota_clock)
    app.add_middleware(FaultMiddleware, config=config, registry=fault_middleware)
    app.state.faults = config
    return app


API_METHODS = ("GET", "POST", "PATCH", "DELETE")


async def _admin(emulator: Emulator, request: Request, registry: list[FaultMiddleware]) -> Any:
    """Test and setup hooks: apps, agents, unknown fields, faults, state, write timings (stats)."""
    action = request.path_params["action"]
    body = await _json_body(request) if request.method == "POST" else {}
    store = emulator.store
    if action == "state":
        return store.snapshot()
    if action == "apps":
        parent = body.get("name", "")
        if not APP_RE.match(parent) or APP_RE.match(parent).group(2):  # type: ignore[union-attr]
            raise RpcError("INVALID_ARGUMENT", "name must be projects/*/locations/*/apps/*")
        store.app(parent, create=True)
        return {"name": parent}
    if action == "config":
        if "autoCreateApps" in body:
            store.auto_create_apps = bool(body["autoCreateApps"])
        if "operationDelaySeconds" in body:
            delay = body["operationDelaySeconds"]
            if isinstance(delay, bool) or not isinstance(delay, (int, float)) or delay < 0:
                raise RpcError("INVALID_ARGUMENT", "operationDelaySeconds must be a number >= 0")
            emulator.operations.delay = float(delay)
        return {"autoCreateApps": store.auto_create_apps, "operationDelaySeconds": emulator.operations.delay}
    if action == "agents":
        parent, agent_id, tools = body.get("app", ""), body.get("agentId", ""), body.get("tools", [])
        store.app(parent)
        with store.transaction(write=True) as db:
            old = store.get(db, parent, "agents", agent_id)
            data = {**(old.data if old else {"displayName": agent_id}), "tools": list(tools)}
            data = _stamp(data, f"{parent}/agents/{agent_id}", old.data.get("createTime") if old else None)
            store.put(db, parent, "agents", agent_id, printed("agents", data))
        return {"name": f"{parent}/agents/{agent_id}"}
    if action == "inject":
        name, fields = body.get("name", ""), body.get("fields", {})
        match = APP_RE.match(name)
        parts = match.group(2).strip("/").split("/") if match else []
        if not match or len(parts) != 2 or parts[0] not in COLLECTIONS:
            raise RpcError("INVALID_ARGUMENT", "name must be the name of a resource of an app")
        parent, (collection, rid) = match.group(1), parts
        store.app(parent)
        with store.transaction(write=True) as db:
            data = {**emulator._existing(db, parent, collection, rid).data, **fields}
            emulator.taught.update((e.message, str(e.path[-1])) for e in extras(collection, data))
            store.put(db, parent, collection, rid, printed(collection, data))
        return {"name": name}
    if action == "stats":
        refused = emulator.quota_state.refused
        quota = {"quotaRefused": {"writes": refused[WRITE_METRIC], "reads": refused[READ_METRIC]}}
        return {**(registry[0].clock.as_dict() if registry else {}), **quota}
    if action == "quota":
        if request.method == "POST":
            emulator.quota.update(body)
        return emulator.quota.as_dict()
    if action == "faults":
        for middleware in registry:
            middleware.config.update(body)
        return registry[0].config.as_dict() if registry else {}
    raise RpcError("NOT_FOUND", f"unknown admin action '{action}'")
