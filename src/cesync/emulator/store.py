"""The emulator's state and the CES semantics applied to it.

State is plain JSON: ``{"apps": {parent: {"tools": {id: tool}, "toolsets": {...},
"agents": {id: {"tools": [names]}}, "seq": n}}}``. Stored messages use enum names
and the request's spellings; :mod:`cesync.protojson` prints them like the server.

Every operation runs under a lock. With a state file, each operation re-reads the
file if another process changed it, and writes it back atomically (temp file +
rename) under an inter-process file lock, so several emulators can share it.
"""

from __future__ import annotations

import ast
import base64
import copy
import datetime
import hashlib
import json
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from filelock import FileLock
from pydantic import ValidationError

from ..models import TOOL_TYPES, TOOLSET_TYPES, ProtoModel, Tool, Toolset, specs
from .errors import RpcError

T = TypeVar("T")

SYSTEM_TOOLS = {
    "end_session": "Ends the conversation with the user.",
    "transfer_to_human": "Hands the conversation to a human agent.",
    "get_current_time": "Returns the current date and time.",
}
COLLECTIONS: dict[str, type[ProtoModel]] = {"tools": Tool, "toolsets": Toolset}
MAX_PAGE = 1000
DEFAULT_PAGE = 50


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _etag() -> str:
    return uuid.uuid4().hex[:16]


def first_function(code: str) -> tuple[str | None, str | None]:
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None, None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node.name, ast.get_docstring(node)
    return None, None


class Store:
    def __init__(self, path: Path | None = None, *, auto_create_apps: bool = True) -> None:
        self.path = path
        self.auto_create_apps = auto_create_apps
        self._lock = threading.RLock()
        self._state: dict[str, Any] = {"apps": {}}
        self._stamp: tuple[int, int] | None = None
        self._file_lock = FileLock(str(path) + ".lock") if path else None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            with self._file_lock:  # type: ignore[union-attr]
                self._reload()

    # --- persistence -------------------------------------------------------------------

    def _reload(self) -> None:
        assert self.path is not None
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp == self._stamp:
            return
        try:
            self._state = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RpcError("INTERNAL", f"emulator state file {self.path} is unreadable: {exc}") from None
        self._stamp = stamp

    def _save(self) -> None:
        assert self.path is not None
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(self._state, separators=(",", ":")), encoding="utf-8")
        os.replace(tmp, self.path)
        st = self.path.stat()
        self._stamp = (st.st_mtime_ns, st.st_size)

    @contextmanager
    def _txn(self, write: bool) -> Iterator[dict[str, Any]]:
        with self._lock:
            if self._file_lock is None:
                yield self._state
                return
            with self._file_lock:
                self._reload()
                yield self._state
                if write:
                    self._save()

    def read(self, fn: Callable[[dict[str, Any]], T]) -> T:
        with self._txn(False) as state:
            return fn(state)

    def write(self, fn: Callable[[dict[str, Any]], T]) -> T:
        with self._txn(True) as state:
            return fn(state)

    def snapshot(self) -> dict[str, Any]:
        return self.read(copy.deepcopy)

    # --- apps ------------------------------------------------------------------------------

    def app(self, state: dict[str, Any], parent: str, *, create: bool = False) -> dict[str, Any]:
        """An app, created on first use (unless auto_create_apps is off) with its system tools."""
        apps = state.setdefault("apps", {})
        if parent not in apps and not (create or self.auto_create_apps):
            raise RpcError("NOT_FOUND", f"app {parent} not found")
        if parent not in apps:
            now = _now()
            tools = {
                tid: {
                    "name": f"{parent}/tools/{tid}",
                    "displayName": tid,
                    "systemTool": {"name": tid, "description": desc},
                    "createTime": now,
                    "updateTime": now,
                    "etag": _etag(),
                }
                for tid, desc in SYSTEM_TOOLS.items()
            }
            apps[parent] = {"tools": tools, "toolsets": {}, "agents": {}, "seq": 0}
        app: dict[str, Any] = apps[parent]
        return app


# --- validation and server-set fields -------------------------------------------------------


def strip_output_only(data: Any, model: type[ProtoModel]) -> Any:
    """Requests may echo output-only fields; the server ignores them."""
    if not isinstance(data, dict):
        return data
    table = specs(model)
    out = {}
    for key, value in data.items():
        spec = table.get(key)
        if spec is not None and spec.output_only:
            continue
        if spec is not None and spec.message is not None:
            if spec.repeated and isinstance(value, list):
                value = [strip_output_only(v, spec.message) for v in value]
            elif spec.map and isinstance(value, dict):
                value = {k: strip_output_only(v, spec.message) for k, v in value.items()}
            else:
                value = strip_output_only(value, spec.message)
        out[key] = value
    return out


def validated(collection: str, body: dict[str, Any]) -> dict[str, Any]:
    """The stored form of a request body, or INVALID_ARGUMENT with fieldViolations."""
    model = COLLECTIONS[collection]
    singular = collection[:-1]
    data = strip_output_only(body, model)
    for key in ("name", "etag"):
        data.pop(key, None)
    try:
        obj = model.model_validate(data)
    except ValidationError as exc:
        violations = [{"field": ".".join([singular, *(str(p) for p in e["loc"])]), "description": e["msg"]} for e in exc.errors()]
        raise RpcError(
            "INVALID_ARGUMENT",
            f"invalid {singular}: " + "; ".join(f"{v['field']}: {v['description']}" for v in violations),
            details=[{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": violations}],
        ) from None
    stored: dict[str, Any] = obj.model_dump(mode="json", exclude_none=True)
    if collection == "tools" and "mcpTool" in stored:
        raise RpcError("INVALID_ARGUMENT", "mcpTool cannot be created or updated directly; it is managed by an MCP toolset")
    if collection == "tools" and "systemTool" in stored:
        raise RpcError("INVALID_ARGUMENT", "systemTool cannot be created or updated; system tools come with the app")
    return stored


def server_fields(collection: str, parent: str, rid: str, stored: dict[str, Any], created: str | None) -> dict[str, Any]:
    stored["name"] = f"{parent}/{collection}/{rid}"
    now = _now()
    stored["createTime"] = created or now
    stored["updateTime"] = now
    stored["etag"] = _etag()
    if collection == "tools":
        kind = next((t for t in TOOL_TYPES if t in stored), None)
        member = stored.get(kind, {}) if kind else {}
        if kind == "pythonFunction":
            fname, doc = first_function(member.get("pythonCode", ""))
            if not member.get("name") and fname:
                member["name"] = fname
            if doc:
                member["description"] = doc.strip()
            else:
                member.pop("description", None)
        stored["displayName"] = member.get("name") or rid
    else:
        kind = next((t for t in TOOLSET_TYPES if t in stored), None)
        stored.setdefault("displayName", rid)
    return stored


def page_token(offset: int, key: str) -> str:
    raw = json.dumps({"o": offset, "k": hashlib.sha256(key.encode()).hexdigest()[:8]})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def parse_page_token(token: str, key: str) -> int:
    try:
        raw = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        if raw["k"] != hashlib.sha256(key.encode()).hexdigest()[:8]:
            raise ValueError
        return int(raw["o"])
    except (ValueError, KeyError, TypeError):
        raise RpcError("INVALID_ARGUMENT", "invalid pageToken (it belongs to another query or is corrupt)") from None
