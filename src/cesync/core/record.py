"""The applied record: what cesync last applied to an environment, kept in CES itself (pure).

After every successful apply cesync creates an app version (CES's own snapshot of the app,
visible in the console and usable by deployments) whose description carries this record.
AppVersion has two writable fields, ``displayName`` and ``description`` (google-cloud-ces
``AppVersion``: name IDENTIFIER, display_name and description OPTIONAL, creator, create_time,
snapshot and etag OUTPUT_ONLY), so the record is a line of JSON in the description, after a
line a person reads. What the app looked like after the apply is the version's ``snapshot``:
the base of a three-way plan. Every run and every machine reads it back from the app; there is
no local state file to lose.

The record names what cesync owns, explicitly: what it created, adopted or was told to own,
carried from record to record (``owned``), never read off the snapshot, which holds whatever
the app held when the version was made, a resource made by hand during the apply included.

Anyone who may create an app version can write a description, so with a record key (the
pipeline's secret: CESYNC_RECORD_KEY, else CESYNC_PLAN_KEY) the record is sealed: an
HMAC-SHA256 over the app, the record's data and when it was written, and ``sums``, a keyed
hash of each owned resource as the app held it after the apply. ``untrusted`` says why a
record must be ignored: unsealed or wrongly sealed under a key, or written long before the
version carrying it was made (a copy). With a key, drift compares the app with ``sums``, not
only with the snapshot, so a copy of a record over a changed app does not hide the change.
"""

from __future__ import annotations

import base64
import datetime
import functools
import hashlib
import hmac
import json
import re
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..api.jsonvalue import loads as json_loads
from ..api.resource import Resource
from .normalize import canonical

__all__ = [
    "COPY_WINDOW",
    "MARKER",
    "AppliedRecord",
    "owned_sums",
    "parse_record",
    "record_body",
    "record_key",
    "resource_sum",
    "untrusted",
]

MARKER = "cesync-record: "
FORMAT = 2
LEGACY = 1  # format 1: unsealed; its "snapshot minus notOwned" form is read as owning nothing
MAX_DISPLAY = 100
OWNER = re.compile(r"[a-z][a-z0-9-]{0,39}", re.ASCII)  # cesync.yaml owner (repo/config.py), which a record's "ns" repeats
MAX_OWNED_BYTES = 2 << 20  # about 60,000 resources' names
# A sealed record is written just before the version holding it is made; a version made later than
# this after its record's own time holds a copy of it (the clocks of CI and CES may differ a little).
COPY_WINDOW = datetime.timedelta(minutes=10)


@dataclass(frozen=True)
class AppliedRecord:
    """One applied record, as read back from its app version."""

    version: str  # the app version's full name
    env: str
    commit: str  # the git commit applied ("" outside git)
    digest: str  # the plan's digest of the rendered repo (core.planseal.desired_digest)
    cesync_version: str
    time: str  # the version's createTime
    packed_owned: str = ""  # "kind/id" of what cesync owns, as the record holds them (see owned)
    dirty: bool = False  # the checkout had uncommitted changes
    snapshot: dict[str, Any] = field(default_factory=dict)  # AppSnapshot: the app after the apply
    namespace: str = ""  # the owner (cesync.yaml owner:) that wrote it; "" for a repo that names none
    written_at: str = ""  # when cesync wrote it (its own clock; sealed)
    packed_sums: str = ""  # the keyed hashes as the record holds them (see sums)
    seal: str = ""  # HMAC over app, signed and written_at ("" unsealed)
    signed: str = ""  # the record's JSON the seal covers, as read
    legacy: bool = False  # format 1 (written before records were sealed)

    # A record is read whole only once it is the one wanted: a version's head is parsed (and its seal
    # checked) without inflating what it owns, which a console user can make as large as the limit.
    @functools.cached_property
    def owned(self) -> frozenset[str]:
        """ "kind/id" of what cesync owns (empty when the list cannot be read: a damaged record owns nothing)."""
        try:
            return _unpack(self.packed_owned) if self.packed_owned else frozenset()
        except (ValueError, zlib.error, UnicodeDecodeError):
            return frozenset()

    @functools.cached_property
    def sums(self) -> Mapping[str, str]:
        """ "kind/id" -> resource_sum of each owned resource after the apply ({} when unreadable)."""
        try:
            return _unpack_sums(self.packed_sums, self.owned) if self.packed_sums else {}
        except (ValueError, zlib.error):
            return {}


def _pack(keys: Iterable[str]) -> str:
    return base64.b64encode(zlib.compress("\n".join(sorted(keys)).encode(), 9)).decode()


def _unpack(text: str) -> frozenset[str]:
    inflate = zlib.decompressobj()
    raw = inflate.decompress(base64.b64decode(text.encode(), validate=True), MAX_OWNED_BYTES)
    if inflate.unconsumed_tail:
        raise ValueError("owned list too long")  # a description that inflates without end: not a record we made
    return frozenset(k for k in raw.decode().split("\n") if k)


def record_key(raw: bytes) -> bytes:
    """The key records are sealed with, from the pipeline's secret (b"": records are not sealed)."""
    return hmac.new(raw, b"cesync applied record\0", hashlib.sha256).digest() if raw else b""


SUM_BYTES = 6  # 48 bits: nobody without the key can compute one, so a guess is one app version per try


def resource_sum(key: bytes, canonical_body: Any) -> str:
    """A keyed hash of one resource in canonical form (core.normalize.canonical), short (SUM_BYTES), hex."""
    text = json.dumps(canonical_body, sort_keys=True, separators=(",", ":"))
    return hmac.new(key, text.encode(), hashlib.sha256).digest()[:SUM_BYTES].hex()


def _pack_sums(owned: list[str], sums: Mapping[str, str]) -> str:
    """The sums in the order of sorted owned, SUM_BYTES each (zeros: none), without the names the
    owned list already holds: at 10,000 resources a record stays under 100 kB."""
    raw = b"".join(bytes.fromhex(sums[k]) if k in sums else bytes(SUM_BYTES) for k in owned)
    return base64.b64encode(zlib.compress(raw, 9)).decode()


def _unpack_sums(text: str, owned: frozenset[str]) -> dict[str, str]:
    inflate = zlib.decompressobj()
    raw = inflate.decompress(base64.b64decode(text.encode(), validate=True), MAX_OWNED_BYTES)
    names = sorted(owned)
    if inflate.unconsumed_tail or len(raw) != SUM_BYTES * len(names):
        raise ValueError("sums do not match the owned list")
    empty = bytes(SUM_BYTES)
    chunks = (raw[i * SUM_BYTES : (i + 1) * SUM_BYTES] for i in range(len(names)))
    return {k: c.hex() for k, c in zip(names, chunks, strict=True) if c != empty}


def owned_sums(resources: Iterable[Resource], owned: Iterable[str], key: bytes) -> dict[str, str]:
    """ "kind/id" -> resource_sum of each owned resource a version's snapshot holds ({} without a key:
    unkeyed, anyone could make them)."""
    if not key:
        return {}
    wanted = set(owned)
    return {
        f"{r.kind.name}/{r.id}": resource_sum(key, canonical(r.kind, r.id, r.body).body)
        for r in resources
        if r.kind.in_snapshot and not r.kind.singleton and f"{r.kind.name}/{r.id}" in wanted
    }


def _seal(key: bytes, app: str, signed: str) -> str:
    return "hmac-sha256:" + hmac.new(key, f"{app}\0{signed}".encode(), hashlib.sha256).hexdigest()


def _app_of(version_name: str) -> str:
    return version_name.split("/versions/", 1)[0]


def record_body(
    app: str,
    env: str,
    commit: str,
    dirty: bool,
    digest: str,
    cesync_version: str,
    owned: Iterable[str],
    *,
    written_at: str,
    namespace: str = "",
    sums: Mapping[str, str] | None = None,
    key: bytes = b"",
) -> dict[str, Any]:
    """The AppVersion to create, its record sealed under key (record_key) when there is one.

    owned: "kind/id" of everything cesync owns after the apply, named one by one (never read off
    the snapshot). sums: "kind/id" -> resource_sum of the owned resources after the apply."""
    names = sorted(set(owned))
    data: dict[str, Any] = {
        "v": FORMAT,
        "env": env,
        "commit": commit,
        "digest": digest,
        "cesync": cesync_version,
        "at": written_at,
        "owned": _pack(names),
    }
    if dirty:
        data["dirty"] = True
    if namespace:
        data["ns"] = namespace
    if sums:
        data["sums"] = _pack_sums(names, sums)
    signed = json.dumps(data, sort_keys=True, separators=(",", ":"))
    line = json.dumps({"r": signed, "seal": _seal(key, app, signed)} if key else {"r": signed}, separators=(",", ":"))
    short = commit[:7] if commit else "no commit"
    display = f"cesync applied {short} to {env}" + (" (+ uncommitted changes)" if dirty else "")
    human = f"What cesync {cesync_version} applied to {env}" + (f" from commit {commit}" if commit else "") + "."
    return {"displayName": display[:MAX_DISPLAY], "description": f"{human}\n{MARKER}{line}"}


@dataclass(frozen=True)
class _Common:
    """What every format reads off the version itself."""

    version: str
    time: str
    snapshot: dict[str, Any]


def parse_record(version: dict[str, Any], kind_of: dict[str, str]) -> AppliedRecord | None:
    """The record a version carries, or None (a version made otherwise, or a record cesync cannot read).

    Reading is not trusting: see untrusted."""
    description = version.get("description")
    if not isinstance(description, str):
        return None
    line = next((x for x in description.splitlines() if x.startswith(MARKER)), None)
    if line is None:
        return None
    try:
        outer = json_loads(line[len(MARKER) :])  # a console user writes versions: bounded depth
        if not isinstance(outer, dict):
            return None
        snapshot = version.get("snapshot") if isinstance(version.get("snapshot"), dict) else {}
        assert isinstance(snapshot, dict)
        common = _Common(str(version.get("name", "")), str(version.get("createTime", "")), snapshot)
        if outer.get("v") == LEGACY:
            return _legacy(outer, common)
        signed = outer.get("r")
        if not isinstance(signed, str):
            return None
        data = json_loads(signed)
        if not isinstance(data, dict) or data.get("v") != FORMAT:
            return None
        packed, packed_sums, namespace = data["owned"], data.get("sums", ""), data.get("ns", "")
        if not isinstance(packed, str) or not isinstance(packed_sums, str) or not isinstance(namespace, str):
            return None
        if namespace and not OWNER.fullmatch(namespace):
            return None  # no cesync.yaml could name this owner: not a record cesync wrote
        return AppliedRecord(
            env=str(data["env"]),
            commit=str(data.get("commit", "")),
            digest=str(data.get("digest", "")),
            cesync_version=str(data.get("cesync", "")),
            packed_owned=packed,
            dirty=bool(data.get("dirty", False)),
            namespace=namespace,
            written_at=str(data.get("at", "")),
            packed_sums=packed_sums,
            seal=str(outer.get("seal", "")),
            signed=signed,
            version=common.version,
            time=common.time,
            snapshot=common.snapshot,
        )
    except (ValueError, KeyError, TypeError, AssertionError, zlib.error, UnicodeDecodeError):
        return None  # not ours after all, or damaged: as if there were no record


def _legacy(data: dict[str, Any], common: _Common) -> AppliedRecord:
    """A format-1 record (unsealed). Its "notOwned" form read ownership off the snapshot, which holds
    whatever anyone made during that apply too: such a record owns nothing (prune then deletes less,
    never something made by hand), and the next apply names what cesync owns from the repo."""
    packed = "" if "notOwned" in data else str(data.get("owned", ""))
    return AppliedRecord(
        env=str(data["env"]),
        commit=str(data.get("commit", "")),
        digest=str(data.get("digest", "")),
        cesync_version=str(data.get("cesync", "")),
        packed_owned=packed,
        dirty=bool(data.get("dirty", False)),
        legacy=True,
        version=common.version,
        time=common.time,
        snapshot=common.snapshot,
    )


def _when(text: str) -> datetime.datetime | None:
    try:
        when = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=datetime.timezone.utc)


def untrusted(record: AppliedRecord, key: bytes) -> str:
    """Why record must be ignored ("" when it may be trusted). key: record_key(...); without one
    nothing can be checked and every record is taken as written (plan says what that lets a
    console user steer)."""
    if not key:
        return ""
    if record.legacy or not record.seal:
        return "it is not sealed (written without the record key, or not by cesync)"
    if not hmac.compare_digest(record.seal.encode(), _seal(key, _app_of(record.version), record.signed).encode()):
        return "its seal does not match (written or edited without the record key)"
    written, made = _when(record.written_at), _when(record.time)
    if written is None or made is None:
        return "it says no time it was written"
    if not (written - COPY_WINDOW <= made <= written + COPY_WINDOW):
        return f"it was written at {record.written_at} but its version was made at {record.time}: a copy of another record"
    return ""
