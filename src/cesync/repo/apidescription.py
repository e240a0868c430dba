"""Which description of the CES API a repo is read with: the bundled one, or a newer one.

cesync ships a description of the API generated from google-cloud-ces and Google's discovery
document of one revision (scripts/gen_api.py). CES moves faster; a field CES has must never
block a user. Before the files render, :func:`settle` decides:

1. the repo names discovery documents in cesync.yaml (``api: {discovery: {v1: FILE}}``): those,
   merged into the bundled description (cesync.api.descriptors.use_documents);
2. else, when a file writes a field or enum value the description lacks (and no typo of one it
   has: core.checks.strangers), the newest document cached under ``.cesync/discovery/`` that
   has them all, or else the live one, fetched from ces.googleapis.com (client.apidocs: Google's
   hosts only, the client's credential rules) and cached by revision;
3. else the bundled description: each field still unknown is then one problem saying which
   revision cesync knows and how to give it a newer one.

Nothing is fetched when cesync.yaml says ``api: {fetch: false}`` or the process has
CESYNC_OFFLINE set (the project's tests set it: they never touch the real network).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..api import descriptors
from ..core import parsecache
from ..core.checks import strangers
from ..core.yamlfile import Document
from ..errors import CesyncError, Problem
from .cache import signing_key
from .config import Config
from .loading import SourceFile

__all__ = ["CACHE_FOLDER", "OFFLINE_VAR", "Fetch", "cached_documents", "settle"]

OFFLINE_VAR = "CESYNC_OFFLINE"
CACHE_FOLDER = Path(".cesync") / "discovery"
VERSIONS = ("v1", "v1beta")
MAX_FILE = 16 * 1024 * 1024
Fetch = Callable[[str], dict[str, Any]]  # API version -> the live discovery document (CesyncError when none)
_CACHED = re.compile(r"^ces\.(v1|v1beta)\.(\d{8,14})\.json\Z")


def _live(version: str) -> dict[str, Any]:
    from ..client.apidocs import fetch_discovery

    return fetch_discovery(version)


def settle(
    root: Path,
    config: Config,
    config_doc: Document,
    files: list[SourceFile],
    problems: list[Problem],
    *,
    fetch: Fetch | None = None,
) -> None:
    """Put the description the repo needs in use (see the module's text); problems appended.
    ``fetch``: how to get the live document (default: from ces.googleapis.com)."""
    descriptors.note_unavailable(None)
    if config.api.discovery:
        documents = _named(root, config, config_doc, problems)
        _use(documents, problems, config_doc)
        return
    if descriptors.newer_documents():
        descriptors.use_documents({})  # another repo's, earlier in this process
    wanted = _wanted(files)
    if not wanted:
        return
    for documents in _newest_first(cached_documents(root)):
        try:
            descriptors.use_documents(documents)
        except ValueError:
            continue  # a cache entry that is no description: passed over
        if not _wanted(files):
            return
    descriptors.use_documents({})
    if not config.api.fetch or os.environ.get(OFFLINE_VAR):
        return
    fetch = fetch or _live
    fetched: dict[str, dict[str, Any]] = {}
    failed: list[str] = []
    for version in VERSIONS:
        try:
            document = fetch(version)
        except CesyncError as exc:
            failed.append(str(exc))
            continue  # offline, or no such version: each unknown field says what to do, and why
        if int(document["revision"]) > int(descriptors.revision() or 0):
            fetched[version] = document
    if fetched:
        _save(root, fetched)
        _use(fetched, problems, config_doc)
    elif failed:
        descriptors.note_unavailable(failed[0][:300])


def _wanted(files: list[SourceFile]) -> list[str]:
    return [found for f in files for found in _strangers_of(f)]  # a SourceFile's data is a mapping (load_sources)


def _strangers_of(f: SourceFile) -> list[str]:
    """strangers of a file, kept in the parse cache by its text and the description in use (a
    function of both alone)."""
    cache = parsecache.current()
    if cache is None or not f.doc.digest:
        return strangers(f.doc.data, f.kind.model)
    key = b"s" + hashlib.blake2b(b"\0".join((descriptors.description_id(), f.kind.name.encode(), f.doc.digest))).digest()[:20]
    kept = cache.get(key)
    if isinstance(kept, list) and all(isinstance(x, str) for x in kept):
        return [str(x) for x in kept]
    found = strangers(f.doc.data, f.kind.model)
    cache.put(key, found)
    return found


def _named(root: Path, config: Config, config_doc: Document, problems: list[Problem]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    inside = root.resolve()
    for version, name in sorted(config.api.discovery.items()):
        at = ("api", "discovery", version)
        path = (root / name).resolve()
        if Path(name).is_absolute() or not path.is_relative_to(inside):
            problems.append(
                config_doc.problem(at, f"{name} resolves outside the repo: cesync reads only files inside it; copy it in")
            )
            continue
        try:
            raw = _read_regular(path, follow=True)
        except OSError as exc:
            problems.append(config_doc.problem(at, f"cannot read {name}: {exc.strerror or exc}"))
            continue
        if raw is None:
            problems.append(config_doc.problem(at, f"{name} is not a regular file: not a discovery document"))
            continue
        if len(raw) > MAX_FILE:
            problems.append(config_doc.problem(at, f"{name} is over {MAX_FILE // (1024 * 1024)} MB: not a discovery document"))
            continue
        try:
            document = json.loads(raw)
        except (ValueError, RecursionError):
            problems.append(config_doc.problem(at, f"{name} is not JSON (Google's discovery document is)"))
            continue
        if not isinstance(document, dict):
            problems.append(config_doc.problem(at, f"{name} is not Google's discovery document for CES {version}"))
            continue
        out[version] = document
    return out


def _read_regular(path: Path, *, follow: bool) -> bytes | None:
    """At most MAX_FILE + 1 bytes of a regular file; None for anything else (a FIFO would block
    the run, /dev/zero never end). ``follow=False``: a symlink is refused too (OSError)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read(MAX_FILE + 1)


def _use(documents: dict[str, dict[str, Any]], problems: list[Problem], config_doc: Document) -> None:
    try:
        descriptors.use_documents(documents)
    except ValueError as exc:
        descriptors.use_documents({})
        problems.append(config_doc.problem(("api", "discovery"), f"{exc}; download it from {_URL}"))
        return
    bundled = _bundled_revision()
    for version, document in documents.items():
        if int(document["revision"]) < int(bundled or 0):
            problems.append(
                config_doc.problem(
                    ("api", "discovery", version),
                    f"the discovery document is revision {document['revision']}, older than the one cesync ships "
                    f"({bundled}): remove it from cesync.yaml, or download the current one from {_URL}",
                )
            )


_URL = "https://ces.googleapis.com/$discovery/rest?version=v1"


def _bundled_revision() -> str:
    with descriptors.BEHAVIORS_FILE.open(encoding="utf-8") as handle:
        return str(json.load(handle).get("discovery", {}).get("revision", ""))


def cached_documents(root: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """The cached documents newer than the bundled description: revision -> version -> document.

    .cesync/ is in the repo, which a pull request writes: an entry counts only when it is a
    regular file signed with this machine's key (repo.cache.signing_key), as cesync saved it."""
    folder = root / CACHE_FOLDER
    bundled = int(_bundled_revision() or 0)
    key = signing_key()
    out: dict[str, dict[str, dict[str, Any]]] = {}
    if key is None or folder.is_symlink() or (root / CACHE_FOLDER.parent).is_symlink() or not folder.is_dir():
        return out
    for path in sorted(folder.glob("ces.*.json")):
        match = _CACHED.match(path.name)
        if match is None or int(match.group(2)) <= bundled:
            continue
        try:
            raw = _read_regular(path, follow=False)
            signature = _read_regular(path.with_name(path.name + ".sig"), follow=False)
        except OSError:
            continue
        if raw is None or signature is None or len(raw) > MAX_FILE:
            continue
        if not hmac.compare_digest(signature.strip(), _signature(key, raw).encode()):
            continue  # not what this machine fetched: passed over, fetched again
        try:
            document = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if isinstance(document, dict) and str(document.get("revision")) == match.group(2):
            out.setdefault(match.group(2), {})[match.group(1)] = document
    return out


def _signature(key: bytes, raw: bytes) -> str:
    return hmac.new(key, b"cesync-discovery-cache 1\n" + raw, hashlib.sha256).hexdigest()


def _newest_first(cached: dict[str, dict[str, dict[str, Any]]]) -> list[dict[str, dict[str, Any]]]:
    return [cached[revision] for revision in sorted(cached, key=int, reverse=True)]


def _save(root: Path, documents: dict[str, dict[str, Any]]) -> None:
    """Keep the fetched documents, signed; never through a symlink the repo planted (.cesync, the
    folder, a file): it would have the document written over any file the job can write."""
    key = signing_key()
    folder = root / CACHE_FOLDER
    if key is None or any(p.is_symlink() for p in (root / CACHE_FOLDER.parent, folder)):
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not folder.resolve().is_relative_to(root.resolve()):
            return
        for version, document in documents.items():
            target = folder / f"ces.{version}.{document['revision']}.json"
            raw = json.dumps(document).encode()
            for path, data in ((target, raw), (target.with_name(target.name + ".sig"), _signature(key, raw).encode())):
                temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
                fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                os.replace(temporary, path)  # a symlink at path is replaced, never written through
    except OSError:
        pass  # a read-only checkout: used this run, fetched again the next
