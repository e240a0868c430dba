"""The emulator's state: one SQLite row per resource, shared safely by several processes.

Each row keeps the resource's proto3 JSON data and its answer text in both enum
encodings (printed once, at write time), so reads and lists only concatenate text.
Without a path the database lives in memory. With ``--state`` it is a file in WAL
mode: writes are ``BEGIN IMMEDIATE`` transactions (SQLite's own inter-process
lock, waited on for up to a minute), so several emulators can share one file and
no write rewrites more than its own row.
"""

from __future__ import annotations

import ast
import base64
import datetime
import hashlib
import json
import sqlite3
import threading
import uuid
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

from .errors import RpcError
from .resources import COLLECTIONS as RESOURCE_COLLECTIONS
from .wire import Printed, printed

SYSTEM_TOOLS = {
    "end_session": "Ends the conversation with the user.",
    "transfer_to_human": "Hands the conversation to a human agent.",
    "get_current_time": "Returns the current date and time.",
}
COLLECTIONS = tuple(RESOURCE_COLLECTIONS)
MAX_PAGE = 1000
DEFAULT_PAGE = 50
SCHEMA = """
CREATE TABLE IF NOT EXISTS apps (name TEXT PRIMARY KEY, seq INTEGER NOT NULL DEFAULT 0, names TEXT, ints TEXT);
CREATE TABLE IF NOT EXISTS resources (
    app TEXT NOT NULL, collection TEXT NOT NULL, id TEXT NOT NULL,
    name TEXT NOT NULL, create_time TEXT NOT NULL, system INTEGER NOT NULL DEFAULT 0,
    display_name TEXT, names TEXT NOT NULL, ints TEXT NOT NULL,
    PRIMARY KEY (app, collection, id)
);
CREATE TABLE IF NOT EXISTS operations (
    name TEXT PRIMARY KEY, due REAL NOT NULL, body TEXT NOT NULL, done INTEGER NOT NULL DEFAULT 0
);
"""


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_etag() -> str:
    return uuid.uuid4().hex[:16]


@lru_cache(maxsize=1024)
def first_function(code: str) -> tuple[str | None, str | None]:
    """The name and docstring of the code's first top-level function (kept by code: an update
    that resends unchanged code does not parse it again; each create parses its own)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):  # the last two: nesting too deep for the parser
        return None, None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node.name, ast.get_docstring(node)
    return None, None


def app_data(parent: str, fields: dict[str, Any] | None = None, created: str | None = None) -> dict[str, Any]:
    """An app as the server keeps it: the writable fields given, and the server's own."""
    stamp = now()
    data = {**(fields or {}), "name": parent, "createTime": created or stamp, "updateTime": stamp, "etag": new_etag()}
    data.setdefault("displayName", parent.rsplit("/", 1)[-1])
    return data


class Store:
    def __init__(self, path: Path | None = None, *, auto_create_apps: bool = False) -> None:
        self.path = path
        self.auto_create_apps = auto_create_apps
        self._lock = threading.RLock()
        self._known: set[str] = set()
        legacy = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            legacy = _legacy_state(path)
        self._db = sqlite3.connect(str(path) if path else ":memory:", timeout=60, isolation_level=None, check_same_thread=False)
        # Closed when the store goes, or at exit (weakref.finalize runs from atexit), whatever
        # else still holds it: only a close checkpoints the WAL into the state file and removes
        # the -wal and -shm files.
        self._closer = weakref.finalize(self, _close, self._db, self._lock)
        with self._lock:
            if path is not None:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(SCHEMA)
            self._migrate()
        if legacy is not None:
            self.load(legacy)

    def _migrate(self) -> None:
        """State files of earlier versions: apps without their data, agents in a table of their own."""
        if "done" not in {row[1] for row in self._db.execute("PRAGMA table_info(operations)")}:
            self._db.execute("ALTER TABLE operations ADD COLUMN done INTEGER NOT NULL DEFAULT 0")
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(apps)")}
        if "names" not in columns:
            self._db.execute("ALTER TABLE apps ADD COLUMN names TEXT")
            self._db.execute("ALTER TABLE apps ADD COLUMN ints TEXT")
        if self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'agents'").fetchone():
            with self.transaction(write=True) as db:
                for parent, aid, tools in db.execute("SELECT app, id, tools FROM agents").fetchall():
                    self.put(db, parent, "agents", aid, printed("agents", _legacy_agent(parent, aid, json.loads(tools))))
                db.execute("DROP TABLE agents")

    def load(self, state: dict[str, Any]) -> None:
        """Add a whole state as :meth:`snapshot` prints it (a JSON state file of earlier versions)."""
        with self.transaction(write=True) as db:
            for parent, entry in state.get("apps", {}).items():
                app = printed("apps", entry.get("app") or app_data(parent))
                db.execute(
                    "INSERT OR REPLACE INTO apps (name, seq, names, ints) VALUES (?, ?, ?, ?)",
                    (parent, int(entry.get("seq", 0)), app.names, app.ints),
                )
                for collection in COLLECTIONS:
                    for rid, data in entry.get(collection, {}).items():
                        if collection == "agents" and "displayName" not in data:
                            data = _legacy_agent(parent, rid, list(data.get("tools", [])))
                        self.put(db, parent, collection, rid, printed(collection, data))

    @contextmanager
    def transaction(self, write: bool = False) -> Iterator[sqlite3.Connection]:
        """One atomic step; a write holds the database's write lock from its first read."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            except sqlite3.Error as exc:
                raise RpcError("INTERNAL", f"emulator state {self.path} is unusable: {exc}") from None
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            else:
                self._db.execute("COMMIT")

    # --- apps ------------------------------------------------------------------------------

    def app(self, parent: str, *, create: bool = False) -> None:
        """Make sure an app exists: NOT_FOUND, or created on first use when auto_create_apps is on."""
        if parent in self._known:
            return
        with self.transaction(write=True) as db:
            if not db.execute("SELECT 1 FROM apps WHERE name = ?", (parent,)).fetchone():
                if not (create or self.auto_create_apps):
                    raise RpcError("NOT_FOUND", f"app {parent} not found")
                self.create_app(db, parent, printed("apps", app_data(parent)))
        self._known.add(parent)

    def create_app(self, db: sqlite3.Connection, parent: str, res: Printed) -> None:
        """A new app with its system tools."""
        db.execute("INSERT INTO apps (name, names, ints) VALUES (?, ?, ?)", (parent, res.names, res.ints))
        stamp = res.data.get("createTime") or now()
        for tid, desc in SYSTEM_TOOLS.items():
            data = {
                "name": f"{parent}/tools/{tid}",
                "displayName": tid,
                "systemTool": {"name": tid, "description": desc},
                "createTime": stamp,
                "updateTime": stamp,
                "etag": new_etag(),
            }
            self.put(db, parent, "tools", tid, printed("tools", data))

    def get_app(self, db: sqlite3.Connection, parent: str) -> Printed | None:
        row = db.execute("SELECT names, ints FROM apps WHERE name = ?", (parent,)).fetchone()
        if row is None:
            return None
        if row[0] is None:  # an app of an earlier version's state: give it its data now
            res = printed("apps", app_data(parent))
            self.put_app(db, parent, res)
            return res
        return Printed(json.loads(row[0]), row[0], row[1])

    def put_app(self, db: sqlite3.Connection, parent: str, res: Printed) -> None:
        db.execute("UPDATE apps SET names = ?, ints = ? WHERE name = ?", (res.names, res.ints, parent))

    def list_apps(self, db: sqlite3.Connection, location: str) -> list[Printed]:
        rows = db.execute("SELECT name FROM apps WHERE name LIKE ? ORDER BY name", (f"{location}/apps/%",)).fetchall()
        return [res for (name,) in rows if name.rsplit("/apps/", 1)[0] == location and (res := self.get_app(db, name))]

    def delete_app(self, db: sqlite3.Connection, parent: str) -> None:
        db.execute("DELETE FROM resources WHERE app = ?", (parent,))
        db.execute("DELETE FROM apps WHERE name = ?", (parent,))
        self._known.discard(parent)

    def next_id(self, db: sqlite3.Connection, parent: str, singular: str) -> str:
        db.execute("UPDATE apps SET seq = seq + 1 WHERE name = ?", (parent,))
        (seq,) = db.execute("SELECT seq FROM apps WHERE name = ?", (parent,)).fetchone()
        return f"{singular.lower()}-{seq:06d}"

    # --- resources ---------------------------------------------------------------------------

    def get(self, db: sqlite3.Connection, parent: str, collection: str, rid: str) -> Printed | None:
        row = db.execute(
            "SELECT names, ints FROM resources WHERE app = ? AND collection = ? AND id = ?", (parent, collection, rid)
        ).fetchone()
        return Printed(json.loads(row[0]), row[0], row[1]) if row else None

    def text(self, db: sqlite3.Connection, parent: str, collection: str, rid: str, enum_int: bool) -> str | None:
        """A resource's answer text alone (what get() holds as Printed.text, without reading its data)."""
        row = db.execute(
            f"SELECT {'ints' if enum_int else 'names'} FROM resources WHERE app = ? AND collection = ? AND id = ?",
            (parent, collection, rid),
        ).fetchone()
        return str(row[0]) if row else None

    def put(self, db: sqlite3.Connection, parent: str, collection: str, rid: str, res: Printed) -> None:
        db.execute(
            "INSERT OR REPLACE INTO resources (app, collection, id, name, create_time, system, display_name, names, ints)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                parent,
                collection,
                rid,
                res.data["name"],
                res.data.get("createTime", ""),
                int("systemTool" in res.data),
                res.data.get("displayName"),
                res.names,  # the data itself: names is its JSON text
                res.ints,
            ),
        )

    def delete(self, db: sqlite3.Connection, parent: str, collection: str, rid: str) -> None:
        db.execute("DELETE FROM resources WHERE app = ? AND collection = ? AND id = ?", (parent, collection, rid))

    def page(
        self,
        db: sqlite3.Connection,
        parent: str,
        collection: str,
        *,
        system: bool,
        offset: int,
        size: int,
        order: tuple[str, bool] | None = ("name", False),
        arrange: Callable[[list[tuple[str, str, dict[str, Any]]]], list[tuple[str, str, dict[str, Any]]]] | None = None,
        cut: str = "",
    ) -> tuple[list[tuple[str, str]], int]:
        """(names text, ints text) of one page of a collection, and how many the whole list holds. order:
        (name or createTime, descending), which the database sorts by; None: arrange filters and sorts
        every row, as (names text, ints text, data), in Python (a list filter, another order).
        cut: a field (a name of letters) each text is cut after, by the database: a version's
        snapshot, as large as the app, never reaches Python to be dropped (partial.without_last)."""
        where = "app = ? AND collection = ?" + ("" if system else " AND system = 0")
        cols = f"{_cut_after('names', cut)}, {_cut_after('ints', cut)}" if cut.isalpha() and order is not None else "names, ints"
        args = (parent, collection)
        if order is None:
            assert arrange is not None
            rows = db.execute(f"SELECT names, ints FROM resources WHERE {where}", args).fetchall()
            kept = arrange([(r[0], r[1], json.loads(r[0])) for r in rows])
            return [(r[0], r[1]) for r in kept[offset : offset + size]], len(kept)
        key = "create_time" if order[0] == "createTime" else "name"
        direction = "DESC" if order[1] else "ASC"
        (total,) = db.execute(f"SELECT count(*) FROM resources WHERE {where}", args).fetchone()
        rows = db.execute(
            f"SELECT {cols} FROM resources WHERE {where} ORDER BY {key} {direction}, name {direction} LIMIT ? OFFSET ?",
            (*args, size, offset),
        ).fetchall()
        return [(r[0], r[1]) for r in rows], int(total)

    def display_name_taken(self, db: sqlite3.Connection, parent: str, collection: str, name: str, rid: str) -> bool:
        return bool(
            db.execute(
                "SELECT 1 FROM resources WHERE app = ? AND collection = ? AND display_name = ? AND id != ?",
                (parent, collection, name, rid),
            ).fetchone()
        )

    def all_data(self, db: sqlite3.Connection, parent: str, collection: str) -> dict[str, dict[str, Any]]:
        rows = db.execute(
            "SELECT id, names FROM resources WHERE app = ? AND collection = ? ORDER BY name", (parent, collection)
        ).fetchall()
        return {rid: json.loads(data) for rid, data in rows}

    def mentioning(
        self, db: sqlite3.Connection, parent: str, text: str, collections: tuple[str, ...]
    ) -> list[tuple[str, str, dict[str, Any]]]:
        """(collection, id, data) of the resources of ``collections`` whose JSON holds ``text`` anywhere (a
        cheap first cut). Asked by collection, so the app's changelogs (one per write, each naming what it
        wrote) are neither scanned nor parsed."""
        marks = ", ".join("?" * len(collections))
        rows = db.execute(
            f"SELECT collection, id, names FROM resources WHERE app = ? AND collection IN ({marks}) AND instr(names, ?) > 0"
            " ORDER BY collection, id",
            (parent, *collections, json.dumps(text)[:-1]),  # no closing quote: a toolset's tools are named under it
        ).fetchall()
        return [(c, rid, json.loads(data)) for c, rid, data in rows]

    # --- long-running operations ------------------------------------------------------------------

    def put_operation(self, db: sqlite3.Connection, name: str, due: float, body: dict[str, Any]) -> None:
        db.execute(
            "INSERT OR REPLACE INTO operations (name, due, body, done) VALUES (?, ?, ?, ?)",
            (name, due, json.dumps(body), int(bool(body.get("done")))),
        )

    def due_operations(self, db: sqlite3.Connection, now: float) -> list[str]:
        """Operations still running whose time has come."""
        rows = db.execute("SELECT name FROM operations WHERE done = 0 AND due <= ? ORDER BY due", (now,))
        return [name for (name,) in rows.fetchall()]

    def get_operation(self, db: sqlite3.Connection, name: str) -> tuple[float, dict[str, Any]] | None:
        row = db.execute("SELECT due, body FROM operations WHERE name = ?", (name,)).fetchone()
        return (float(row[0]), json.loads(row[1])) if row else None

    def operation_names(self, db: sqlite3.Connection, location: str) -> list[str]:
        rows = db.execute("SELECT name FROM operations WHERE name LIKE ? ORDER BY name", (f"{location}/operations/%",))
        return [name for (name,) in rows.fetchall()]

    def delete_operation(self, db: sqlite3.Connection, name: str) -> None:
        db.execute("DELETE FROM operations WHERE name = ?", (name,))

    # --- whole state -----------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """Everything, as ``{"apps": {parent: {"app": app, "tools": {id: tool}, "agents": {...}, ..., "seq": n}}}``."""
        with self.transaction() as db:
            apps: dict[str, Any] = {}
            for parent, seq in db.execute("SELECT name, seq FROM apps ORDER BY name").fetchall():
                app = self.get_app(db, parent)
                entry: dict[str, Any] = {"app": app.data if app else {}}
                entry.update({c: self.all_data(db, parent, c) for c in COLLECTIONS})
                entry["seq"] = seq
                apps[parent] = entry
            return {"apps": apps}

    def close(self) -> None:
        self._closer()


def _close(db: sqlite3.Connection, lock: threading.RLock) -> None:
    """Close once no transaction runs; at exit a daemon thread stuck in one is left alone
    (its committed writes are in the WAL, which the next open reads)."""
    if lock.acquire(timeout=10):
        try:
            db.close()
        finally:
            lock.release()


def _legacy_agent(parent: str, aid: str, tools: list[str]) -> dict[str, Any]:
    """An agent of an earlier state (an id and its tools) as a resource."""
    stamp = now()
    data: dict[str, Any] = {"name": f"{parent}/agents/{aid}", "displayName": aid, "createTime": stamp, "updateTime": stamp}
    if tools:
        data["tools"] = tools
    data["etag"] = new_etag()
    return data


def _legacy_state(path: Path) -> dict[str, Any] | None:
    """A JSON state file (what ``snapshot`` prints, and what earlier versions kept) moves into SQLite."""
    try:
        head = path.read_bytes()[:16]
    except FileNotFoundError:
        return None
    if head.startswith(b"SQLite format 3") or not head.lstrip().startswith(b"{"):
        return None
    try:
        state: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RpcError("INTERNAL", f"emulator state file {path} is unreadable: {exc}") from None
    path.unlink()
    return state


def _cut_after(column: str, field: str) -> str:
    """SQL: column's text up to the end of '"field":' (all of it when it holds none)."""
    mark = f'"{field}":'
    at = f"instr({column}, '{mark}')"
    return f"CASE WHEN {at} > 0 THEN substr({column}, 1, {at} + {len(mark) - 1}) ELSE {column} END"


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
