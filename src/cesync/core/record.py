"""The applied record: what cesync last applied to an environment, kept in CES itself (pure).

After every successful apply cesync creates an app version (CES's own snapshot of the app,
visible in the console and usable by deployments) whose description carries this record.
AppVersion has two writable fields, ``displayName`` and ``description`` (google-cloud-ces
``AppVersion``: name IDENTIFIER, display_name and description OPTIONAL, creator, create_time,
snapshot and etag OUTPUT_ONLY), so the record is a line of JSON in the description, after a
line a person reads. What the app looked like after the apply is the version's ``snapshot``:
the base of a three-way plan. Every run and every machine reads it back from the app; there is
no local state file to lose.

The record holds which resources cesync owns (created, or adopted by applying a repo that
defines them): ``--prune`` deletes only those. The list is stored compressed; of the two
ways to name it (what is owned, or what in the snapshot is not) the shorter is kept.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MARKER", "AppliedRecord", "parse_record", "record_body", "snapshot_keys"]

MARKER = "cesync-record: "
FORMAT = 1
MAX_DISPLAY = 100
MAX_OWNED_BYTES = 16 << 20


@dataclass(frozen=True)
class AppliedRecord:
    """One applied record, as read back from its app version."""

    version: str  # the app version's full name
    env: str
    commit: str  # the git commit applied ("" outside git)
    digest: str  # the plan's digest of the rendered repo (core.planseal.desired_digest)
    cesync_version: str
    time: str  # the version's createTime
    owned: frozenset[str] = field(default_factory=frozenset)  # "kind/id" of what cesync owns
    dirty: bool = False  # the checkout had uncommitted changes
    snapshot: dict[str, Any] = field(default_factory=dict)  # AppSnapshot: the app after the apply


def _pack(keys: Iterable[str]) -> str:
    return base64.b64encode(zlib.compress("\n".join(sorted(keys)).encode(), 9)).decode()


def _unpack(text: str) -> frozenset[str]:
    inflate = zlib.decompressobj()
    raw = inflate.decompress(base64.b64decode(text.encode(), validate=True), MAX_OWNED_BYTES)
    if inflate.unconsumed_tail:
        raise ValueError("owned list too long")  # a description that inflates without end: not a record we made
    return frozenset(k for k in raw.decode().split("\n") if k)


def record_body(
    env: str, commit: str, dirty: bool, digest: str, cesync_version: str, owned: Iterable[str], present: Iterable[str]
) -> dict[str, Any]:
    """The AppVersion to create. present: "kind/id" of every resource the app holds after the apply."""
    owned_set, present_set = set(owned), set(present)
    data: dict[str, Any] = {"v": FORMAT, "env": env, "commit": commit, "digest": digest, "cesync": cesync_version}
    if dirty:
        data["dirty"] = True
    by_owned, by_other = _pack(owned_set), _pack(present_set - owned_set)
    # "notOwned" reads against the snapshot: what it holds minus these (a resource owned but not in
    # the app after the apply is not worth naming: prune only ever looks at what exists)
    if len(by_other) < len(by_owned) and owned_set <= present_set:
        data["notOwned"] = by_other
    else:
        data["owned"] = by_owned
    short = commit[:7] if commit else "no commit"
    display = f"cesync applied {short} to {env}" + (" (+ uncommitted changes)" if dirty else "")
    human = f"What cesync {cesync_version} applied to {env}" + (f" from commit {commit}" if commit else "") + "."
    return {
        "displayName": display[:MAX_DISPLAY],
        "description": f"{human}\n{MARKER}{json.dumps(data, sort_keys=True, separators=(',', ':'))}",
    }


def snapshot_keys(snapshot: dict[str, Any], kind_of: dict[str, str]) -> set[str]:
    """ "kind/id" of every resource an AppSnapshot holds. kind_of: collection -> kind name."""
    keys: set[str] = set()
    for collection, items in snapshot.items():
        kind = kind_of.get(collection)
        if kind is None or not isinstance(items, list):
            continue
        keys.update(f"{kind}/{str(i.get('name', '')).rsplit('/', 1)[-1]}" for i in items if isinstance(i, dict))
    return keys


def parse_record(version: dict[str, Any], kind_of: dict[str, str]) -> AppliedRecord | None:
    """The record a version carries, or None (a version made otherwise, or a record cesync cannot read)."""
    description = version.get("description")
    if not isinstance(description, str):
        return None
    line = next((x for x in description.splitlines() if x.startswith(MARKER)), None)
    if line is None:
        return None
    try:
        data = json.loads(line[len(MARKER) :])
        if not isinstance(data, dict) or data.get("v") != FORMAT:
            return None
        snapshot = version.get("snapshot") if isinstance(version.get("snapshot"), dict) else {}
        assert isinstance(snapshot, dict)
        if "notOwned" in data:
            owned = frozenset(snapshot_keys(snapshot, kind_of) - _unpack(str(data["notOwned"])))
        else:
            owned = _unpack(str(data.get("owned", "")))
        return AppliedRecord(
            version=str(version.get("name", "")),
            env=str(data["env"]),
            commit=str(data.get("commit", "")),
            digest=str(data.get("digest", "")),
            cesync_version=str(data.get("cesync", "")),
            time=str(version.get("createTime", "")),
            owned=owned,
            dirty=bool(data.get("dirty", False)),
            snapshot=snapshot,
        )
    except (ValueError, KeyError, TypeError, zlib.error, UnicodeDecodeError):
        return None  # not ours after all, or damaged: as if there were no record
