"""The applied record's base, known again without reading its version whole: a plan of an app
that did not change since the apply reads only the versions' heads.

plan reads this owner's newest trusted record of the environment: its head (one entry of the
app's versions list) says what cesync owns, when, and its seal; the version read whole adds
its snapshot, the base of a three-way plan, which is the app again (at 10,000 resources some
20 MB of JSON the server prints and the client decodes, on every plan). An app version is
immutable once made (google-cloud-ces ``AppVersion``: "It is immutable and cannot be modified
once created"; ``snapshot`` and ``create_time`` are OUTPUT_ONLY; UpdateAppVersion, ces.v1.json
revision 20261016, writes ``display_name`` and ``description`` only), so what a version's
snapshot holds is known by the version. The cache (repo/cache.py RECORD_FILE, signed as every
cache of the repo is) keeps one digest of the base per version head, its resources as the drift
checks compare them (drift.as_desired); when the app as read has that digest, the app stands
for the base (``AppBase``). When it has another (the app changed
since the apply) the version is read whole, as without the cache.

Nothing of the app is kept: the cache is a file CI keeps and hands to other jobs, so it holds
digests keyed with the cache's own key (repo.cache.signing_key), which tell a reader of the
file nothing to check guesses against. Nor does it decide trust: which record counts is
decided on the heads on every run, with or without the cache (sync.record.read_records); an
entry stands only for the snapshot of the version already chosen, and only for the head it
was made from, all of it (name, createTime, etag, description, display name) and the endpoint
it was read from: a version deleted and made again under the same id misses.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import marshal
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..api.kinds import APP, KINDS, by_snapshot_field
from ..api.resource import Resource
from ..core.parsecache import MISSING, ParseCache
from ..core.passes.drift import as_desired
from ..repo.cache import RECORD_FILE, load_cache, save_cache, signing_key

__all__ = ["AppBase", "RecordCache", "base_of", "open_record_cache", "save_known"]

Base = Mapping[tuple[str, str], dict[str, Any]]


def base_of(snapshot: Mapping[str, Any], kind_of: Mapping[str, str]) -> dict[tuple[str, str], dict[str, Any]]:
    """A version's snapshot per (kind, id): the base of a three-way plan."""
    base: dict[tuple[str, str], dict[str, Any]] = {}
    for collection, items in snapshot.items():
        if (kind := by_snapshot_field(collection)) is not None and kind.singleton and isinstance(items, dict):
            base[(kind.name, APP)] = items
        elif collection in kind_of and isinstance(items, list):
            base.update(
                {(kind_of[collection], str(i.get("name", "")).rsplit("/", 1)[-1]): i for i in items if isinstance(i, dict)}
            )
    return base


class RecordCache:
    """The digests the repo's cache holds, by version head, and the key they are made with."""

    def __init__(self, store: ParseCache, key: bytes) -> None:
        self._store = store
        self._key = hmac.new(key, b"cesync record cache", hashlib.sha256).digest()  # not the parse cache's digests' key

    def head_id(self, endpoint: str, head: Mapping[str, Any]) -> bytes:
        """What one version head is known by: all of it as listed (the snapshot is never in a head),
        and where it was read."""
        text = json.dumps([endpoint, head], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hmac.new(self._key, text.encode("utf-8", "surrogatepass"), hashlib.sha256).digest()

    def known(self, head_id: bytes) -> bytes:
        """The digest of the base of the version head_id names (b"": not known)."""
        found = self._store.get(head_id)
        return found if found is not MISSING and isinstance(found, bytes) else b""

    def digest(self, resources: Iterable[tuple[str, str, dict[str, Any]]]) -> bytes:
        """One digest of (kind, id, body) triples, of the kinds a snapshot holds, bodies as the drift
        checks compare them (core.passes.drift.as_desired). marshal format 2 (no references)
        writes equal data as equal bytes, and data differing in a value, a type, or an order as
        different ones."""
        digest = hmac.new(self._key, digestmod=hashlib.sha256)  # SHA-256: the fastest hash here, 20 MB at 10,000
        update, dumps = digest.update, marshal.dumps
        for kind, rid, body in sorted(resources, key=lambda t: (t[0], t[1])):
            if KINDS[kind].in_snapshot:
                update(dumps((kind, rid, as_desired(body)), 2))
        return digest.digest()

    def of_base(self, base: Base) -> bytes:
        return self.digest((kind, rid, body) for (kind, rid), body in base.items())

    def of_app(self, remote: Iterable[Resource]) -> bytes:
        return self.digest((r.kind.name, r.id, r.body) for r in remote)


def open_record_cache(root: Path) -> RecordCache | None:
    """The repo's record cache (None: caching off, or no key to check it with)."""
    store, key = load_cache(root, RECORD_FILE), signing_key()
    return RecordCache(store, key) if store is not None and key is not None else None


def save_known(root: Path, head_id: bytes, digest: bytes) -> None:
    """Keep the digest of the base of one version: the newest record read whole, alone."""
    store = ParseCache()
    store.put(head_id, digest)
    save_cache(root, store, RECORD_FILE, small=True)


class AppBase(Mapping[tuple[str, str], dict[str, Any]]):
    """The base, when the app as read has the digest of the record's base: each resource as the
    app has it, a fresh copy each time it is asked for (as equal to the app's, and as distinct
    from it, as the snapshot's would be). Its server-set fields (name, etag, times) are the
    app's, which the snapshot's may not be: a base is compared without them (drift.as_desired)."""

    def __init__(self, remote: Iterable[Resource]) -> None:
        self._by = {r.key: r.body for r in remote if r.kind.in_snapshot}

    def __getitem__(self, key: tuple[str, str]) -> dict[str, Any]:
        copy: dict[str, Any] = marshal.loads(marshal.dumps(self._by[key], 2))
        return copy

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._by)

    def __len__(self) -> int:
        return len(self._by)
