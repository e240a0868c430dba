"""The parse cache on disk: ``.cesync/cache/parsed.bin`` in the repo, trusted only if this machine wrote it.

A repo is someone else's input (a pull request's branch), and so is anything in it, the
cache included: a cache that said a file parses to other data than its text would make
plan show one thing and apply do another. So the file is signed (HMAC-SHA256) with a key
that is not in the repo: ``CESYNC_CACHE_KEY`` when set (CI keeps it as a secret with the
cache), else a random key made once in the user's cache folder
(``$XDG_CACHE_HOME/cesync/cache-key``, or ``~/.cache``). A file whose signature does not
match, of another cesync version, or damaged, is ignored and replaced; the signature is
checked before a byte of it is read as data. ``CESYNC_CACHE=off`` turns the cache off.

The file holds what the last run used (core/parsecache.py), so it never grows past the
repo, and it is written only when that changed, and only for a repo of MIN_ENTRIES texts
or more (a small one parses in the time it takes to read the key and the file).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import logging
import os
import secrets
import stat
import struct
import sys
from pathlib import Path

from .. import __version__
from ..core.parsecache import ParseCache

__all__ = ["CACHE_FILE", "COMPARED_FILE", "RECORD_FILE", "cached_before", "load_cache", "save_cache", "signing_key"]

log = logging.getLogger(__name__)

CACHE_FILE = Path(".cesync") / "cache" / "parsed.bin"
COMPARED_FILE = Path(".cesync") / "cache" / "compared.bin"  # pairs the plan's diff found equal (core.diff.pair_digest)
RECORD_FILE = Path(".cesync") / "cache" / "record.bin"  # the applied record's base by its digest (sync.recordcache)
FORMAT = b"cesync-parse-cache 2 "  # 2: the entries one after another, each its lengths, key and value
MAX_BYTES = 1 << 30
KEY_BYTES = 32
_LENGTHS = struct.Struct("<IQ")  # an entry's key and value lengths, before the two
MIN_ENTRIES = 200  # texts parsed: below this a repo gets no cache (and the source tree's fixtures none)


def signing_key() -> bytes | None:
    """The key this machine signs what it caches in a repo with (None: no key can be had), for
    caches besides this one (repo.apidescription's discovery documents)."""
    return _key()


def _key() -> bytes | None:
    """The signing key, or None (no key can be had: no cache)."""
    given = os.environ.get("CESYNC_CACHE_KEY")
    if given:
        return given.encode()
    home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    path = Path(home) / "cesync" / "cache-key"
    try:
        key = path.read_bytes()
        if len(key) == KEY_BYTES:
            return key
    except OSError:
        pass
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".cache-key.{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(secrets.token_bytes(KEY_BYTES))
        os.replace(tmp, path)  # two runs at once: one key wins, the other's cache is then not trusted once
        key = path.read_bytes()
    except OSError as exc:
        log.debug("no parse cache: no key could be kept in %s (%s)", path.parent, exc)
        return None
    return key if len(key) == KEY_BYTES else None


def _inside(root: Path, folder: Path) -> bool:
    """Whether folder (made if missing) is in the repo: a .cesync that is a symlink elsewhere is not,
    and nothing is made through one."""
    try:
        top = root.resolve()
        for part in (folder.parent, folder):  # .cesync, then .cesync/cache
            if part.is_symlink() or (part.exists() and not part.resolve().is_relative_to(top)):
                return False
        folder.mkdir(parents=True, exist_ok=True)
        return folder.resolve().is_relative_to(top)
    except OSError:
        return False


def _header(name: Path) -> bytes:
    # Python's version too: ast.parse of one text can succeed on one and fail on another. The
    # file's name too: one cache's file is never read as another's. And cesync's own files:
    # an install from a source tree keeps its version string while the code changes under it.
    python = f"python {sys.version_info[0]}.{sys.version_info[1]}"
    return FORMAT + f"{name.name} {__version__} {python} {_code_id()}".encode() + b"\n"


@functools.cache
def _code_id() -> str:
    """A digest of cesync's own files (2.5 MB, read in a few milliseconds): what other code
    parsed or rendered is not this code's, and every install of the same code agrees (a CI job
    installs cesync afresh, with new file times, and restores the cache of the job before)."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.blake2b(digest_size=12)
    for folder, dirs, names in sorted(os.walk(package)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            if name.endswith((".py", ".json", ".binpb")):
                try:
                    with open(os.path.join(folder, name), "rb") as handle:
                        digest.update(f"{folder[len(str(package)) :]}/{name}\0".encode() + handle.read())
                except OSError:
                    continue
    return digest.hexdigest()


# O_NONBLOCK: a FIFO at the name opens at once (and is then no regular file) instead of waiting for a writer
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


def _off() -> bool:
    return os.environ.get("CESYNC_CACHE", "").lower() in ("off", "0", "no", "false")


def cached_before(root: Path) -> bool:
    """Whether a run of this code left the repo's parse cache (its files then most likely load
    from it): its first line read, nothing checked (load_cache does that)."""
    if _off():
        return False
    header = _header(CACHE_FILE)
    path = root / CACHE_FILE
    try:  # a pull request's folder, a FIFO or a symlink at the name: no cache, never a wait nor a read elsewhere
        if path.parent.is_symlink() or path.parent.parent.is_symlink():
            return False
        fd = os.open(path, _READ_FLAGS)
        with os.fdopen(fd, "rb") as f:
            return stat.S_ISREG(os.fstat(f.fileno()).st_mode) and f.read(len(header)) == header
    except OSError:
        return False


def load_cache(root: Path, name: Path = CACHE_FILE) -> ParseCache | None:
    """The repo's parse cache (or the one name says: COMPARED_FILE), empty when there is none yet
    or it is not to be trusted; None when caching is off or no key can be had."""
    if _off():
        return None
    path = root / name
    try:  # the repo's file, not where a symlink in it points, and never more than MAX_BYTES of it
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return ParseCache()  # none yet: no key needed until one is written
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BYTES or not _inside(root, path.parent):
        os.close(fd)  # before fdopen, which refuses a folder (one a pull request commits at the name)
        log.debug("parse cache %s: not a regular file of the repo, or too large; not used", path)
        return ParseCache()
    with os.fdopen(fd, "rb") as f:
        raw = f.read(MAX_BYTES + 1)
    key = _key()
    if key is None:
        return None
    header = _header(name)
    mac, body = raw[len(header) : len(header) + 32], memoryview(raw)[len(header) + 32 :]  # no copy of the body
    if len(raw) > MAX_BYTES or not raw.startswith(header):
        log.debug("parse cache %s: of another cesync version or too large; not used", path)
        return ParseCache()
    signed = hmac.new(key, header, hashlib.sha256)
    signed.update(body)
    if not hmac.compare_digest(mac, signed.digest()):
        log.debug("parse cache %s: not signed by this machine's key; not used", path)
        return ParseCache()
    del body  # the entries are cut out of raw below
    entries: dict[bytes, bytes] = {}
    at, end = len(header) + 32, len(raw)
    while at < end:  # signed by us: what this code wrote, but read with care all the same
        if at + _LENGTHS.size > end:
            return ParseCache()
        k, v = _LENGTHS.unpack_from(raw, at)
        at += _LENGTHS.size
        if at + k + v > end:
            return ParseCache()
        entries[raw[at : at + k]] = raw[at + k : at + k + v]
        at += k + v
    log.debug("parse cache %s: %d entries", path, len(entries))
    return ParseCache(entries)


def save_cache(root: Path, cache: ParseCache | None, name: Path = CACHE_FILE, *, small: bool = False) -> None:
    """Write what this run used, if it differs from the file; a folder that cannot be written
    is no error (the cache is an optimisation: the next run parses again).

    small: written however few its entries (one saves a read of the app, not a parse)."""
    few = len(cache.kept()) < MIN_ENTRIES and not small if cache is not None else True
    if cache is None or not cache.changed or (few and not (root / name).exists()):
        return  # a small repo parses in less time than reading a cache takes: none is started for it
    key = _key()
    if key is None:
        return
    path = root / name
    if not _inside(root, path.parent):
        log.debug("parse cache not written: %s leads outside the repo (a symlink?)", path.parent)
        return
    entries = cache.kept()
    header = _header(name)
    signed = hmac.new(key, header, hashlib.sha256)
    # The folder is the repo's, which a pull request writes: every file is made anew (O_EXCL), never
    # opened through a symlink planted at its name (the cache would be written over whatever it names).
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        ignore = path.parent / ".gitignore"
        if not ignore.is_symlink() and not ignore.exists():
            with contextlib.suppress(FileExistsError), os.fdopen(_new_file(ignore), "w") as text:
                text.write("# written by cesync: this folder is a cache, never part of the repo\n*\n")
        with os.fdopen(_new_file(tmp), "wb") as out:  # entry by entry: the entries are never copied into one buffer
            out.write(header)
            out.write(bytes(32))  # the signature, once all is written
            for k, v in entries.items():
                lengths = _LENGTHS.pack(len(k), len(v)) + k
                signed.update(lengths)
                signed.update(v)
                out.write(lengths)
                out.write(v)
            out.seek(len(header))
            out.write(signed.digest())
        os.replace(tmp, path)  # a symlink at path is replaced, never written through
    except OSError as exc:
        log.debug("parse cache %s not written: %s", path, exc)
        with contextlib.suppress(OSError):
            tmp.unlink()
    else:
        log.debug("parse cache %s: %d entries written", path, len(entries))


def _new_file(path: Path) -> int:
    """A file made at path for writing; FileExistsError if anything is there, a symlink included."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
