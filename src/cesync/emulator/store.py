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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .errors import RpcError
from .wire import Printed, printed

SYSTEM_TOOLS = {
    "end_session": "Ends the conversation with the user.",
    "transfer_to_human": "Hands the conversation to a human agent.",
    "get_current_time": "Returns the current date and time.",
}
COLLECTIONS = ("tools", "toolsets")
MAX_PAGE = 1000
DEFAULT_PAGE = 50
SCHEMA = """
CREATE TABLE IF NOT EXISTS apps (name TEXT PRIMARY KEY, seq INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS resources (
    app TEXT NOT NULL, collection TEXT NOT NULL, id TEXT NOT NULL,
    name TEXT NOT NULL, create_time TEXT NOT NULL, system INTEGER NOT NULL DEFAULT 0,
    display_name TEXT, names TEXT NOT NULL, ints TEXT NOT NULL,
    PRIMARY KEY (app, collection, id)
);
CREATE TABLE IF NOT EXISTS agents (app TEXT NOT NULL, id TEXT NOT NULL, tools TEXT NOT NULL, PRIMARY KEY (app, id));
"""


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_etag() -> str:
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
        self._known: set[str] = set()
        legacy = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            legacy = _legacy_state(path)
        self._db = sqlite3.connect(str(path) if path else ":memory:", timeout=60, isolation_level=None, check_same_thread=False)
        with self._lock:
            if path is not None:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(SCHEMA)
        if legacy is not None:
            self.load(legacy)

    def load(self, state: dict[str, Any]) -> None:
        """Add a whole state as :meth:`snapshot` prints it (a JSON state file of earlier versions)."""
        with self.transaction(write=True) as db:
            for parent, entry in state.get("apps", {}).items():
                db.execute("INSERT OR REPLACE INTO apps (name, seq) VALUES (?, ?)", (parent, int(entry.get("seq", 0))))
                for collection in COLLECTIONS:
                    for rid, data in entry.get(collection, {}).items():
                        self.put(db, parent, collection, rid, printed(collection, data))
                for aid, agent in entry.get("agents", {}).items():
                    self.set_agent(db, parent, aid, list(agent.get("tools", [])))

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
        """Make sure an app exists: created on first use (unless auto_create_apps is off) with its system tools."""
        if parent in self._known:
            return
        with self.transaction(write=True) as db:
            if not db.execute("SELECT 1 FROM apps WHERE name = ?", (parent,)).fetchone():
                if not (create or self.auto_create_apps):
                    raise RpcError("NOT_FOUND", f"app {parent} not found")
                db.execute("INSERT INTO apps (name) VALUES (?)", (parent,))
                stamp = now()
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
        self._known.add(parent)  # apps are never deleted

    def next_id(self, db: sqlite3.Connection, parent: str, singular: str) -> str:
        db.execute("UPDATE apps SET seq = seq + 1 WHERE name = ?", (parent,))
        (seq,) = db.execute("SELECT seq FROM apps WHERE name = ?", (parent,)).fetchone()
        return f"{singular}-{seq:06d}"

    # --- resources ---------------------------------------------------------------------------

    def get(self, db: sqlite3.Connection, parent: str, collection: str, rid: str) -> Printed | None:
        row = db.execute(
            "SELECT names, ints FROM resources WHERE app = ? AND collection = ? AND id = ?", (parent, collection, rid)
        ).fetchone()
        return Printed(json.loads(row[0]), row[0], row[1]) if row else None

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
        by_time: bool,
        desc: bool,
        offset: int,
        size: int,
    ) -> tuple[list[tuple[str, str]], int]:
        """(names text, ints text) of one page of a collection, and the collection's size."""
        where = "app = ? AND collection = ?" + ("" if system else " AND system = 0")
        key = "create_time" if by_time else "name"
        direction = "DESC" if desc else "ASC"
        args = (parent, collection)
        (total,) = db.execute(f"SELECT count(*) FROM resources WHERE {where}", args).fetchone()
        rows = db.execute(
            f"SELECT names, ints FROM resources WHERE {where} ORDER BY {key} {direction}, name {direction} LIMIT ? OFFSET ?",
            (*args, size, offset),
        ).fetchall()
        return [(r[0], r[1]) for r in rows], int(total)

    def display_name_taken(self, db: sqlite3.Connection, parent: str, name: str, rid: str) -> bool:
        return bool(
            db.execute(
                "SELECT 1 FROM resources WHERE app = ? AND collection = 'toolsets' AND display_name = ? AND id != ?",
                (parent, name, rid),
            ).fetchone()
        )

    def all_data(self, db: sqlite3.Connection, parent: str, collection: str) -> dict[str, dict[str, Any]]:
        rows = db.execute("SELECT id, names FROM resources WHERE app = ? AND collection = ?", (parent, collection)).fetchall()
        return {rid: json.loads(data) for rid, data in rows}

    # --- agents --------------------------------------------------------------------------------

    def agents(self, db: sqlite3.Connection, parent: str) -> dict[str, list[str]]:
        rows = db.execute("SELECT id, tools FROM agents WHERE app = ?", (parent,)).fetchall()
        return {aid: json.loads(tools) for aid, tools in rows}

    def set_agent(self, db: sqlite3.Connection, parent: str, aid: str, tools: list[str]) -> None:
        db.execute("INSERT OR REPLACE INTO agents (app, id, tools) VALUES (?, ?, ?)", (parent, aid, json.dumps(tools)))

    # --- whole state -----------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """Everything, as ``{"apps": {parent: {"tools": {id: tool}, "toolsets": {...}, "agents": {...}, "seq": n}}}``."""
        with self.transaction() as db:
            apps: dict[str, Any] = {}
            for parent, seq in db.execute("SELECT name, seq FROM apps ORDER BY name").fetchall():
                entry: dict[str, Any] = {c: self.all_data(db, parent, c) for c in COLLECTIONS}
                entry["agents"] = {aid: {"tools": tools} for aid, tools in self.agents(db, parent).items()}
                entry["seq"] = seq
                apps[parent] = entry
            return {"apps": apps}

    def close(self) -> None:
        with self._lock:
            self._db.close()


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
