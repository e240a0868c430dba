"""The repo's resource files as the run before loaded them, taken when none of them changed.

Loading reads and parses every resource file, and a warm run of an unchanged 10k repo spent a
second doing it only for the whole render (repo/wholerender.py) to need none of the data. This
entry keeps, for each file the run before loaded, its kind, id, ``ignoreChanges`` and text
digest, with what the file system said of it (size, modification and change times, inode). A
run that finds the same files in the kinds' folders (no symlinked folder, no symlinked file),
each with the same signature, or else the same text, takes them as they were; each file's data
is parsed when something first asks for it, from the file, which must still hold the text the
digest names.

It is kept only when every file loaded without a problem. The repo-wide facts derived from the
files' data that every plan asks for (the owners ``{ref:, owner:}`` declares) are kept with it.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..api.kinds import KINDS, ResourceKind
from ..core.parsecache import MISSING, ParseCache
from ..core.yamlfile import Document, Positions, text_digest
from ..errors import CesyncError, Problem
from .loading import IGNORE_KEY, SourceFile, display_path, kind_files, parse_file

__all__ = ["SETTLED_NS", "LazyDocument", "find", "signature", "store", "unchanged"]

SLOT = b"l" + hashlib.blake2b(b"the repo's resource files", digest_size=20).digest()
SETTLED_NS = 2_000_000_000  # a file last changed this close to its reading is read again (coarse clocks)
# One file: path (its folder says its kind), id, ignoreChanges, text digest, and size, mtime,
# ctime, inode (-1: read it again)
Entry = tuple[str, str, list[str], bytes, int, int, int, int]


class LazyDocument(Document):
    """A resource file's Document whose data and positions are parsed when first asked for."""

    def __init__(self, file: str, digest: bytes, load: Callable[[], Document]) -> None:
        self.file = file
        self.digest = digest
        self._load = load
        self._doc: Document | None = None

    def _loaded(self) -> Document:
        if self._doc is None:
            self._doc = self._load()
        return self._doc

    @property
    def data(self) -> Any:
        return self._loaded().data

    @data.setter
    def data(self, value: Any) -> None:
        self._loaded().data = value

    @property
    def positions(self) -> Positions:
        return self._loaded().positions

    @positions.setter
    def positions(self, value: Positions) -> None:
        self._loaded().positions = value

    @property
    def text(self) -> str:
        return self._loaded().text

    @text.setter
    def text(self, value: str) -> None:
        self._loaded().text = value


def signature(info: os.stat_result, now: int) -> tuple[int, int, int, int]:
    """What vouches for a file unchanged since it was read: (size, mtime, ctime, inode), or
    (-1, 0, 0, 0) when it changed too close to the reading to tell (git's racily clean files)."""
    if info.st_mtime_ns < now - SETTLED_NS and info.st_ctime_ns < now - SETTLED_NS:
        return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
    return (-1, 0, 0, 0)


def find(cache: ParseCache, root: Path) -> tuple[list[SourceFile], dict[str, tuple[str, str]]] | None:
    """The files (data parsed when asked for) and the owners they declare, if none changed."""
    entry = cache.get(SLOT)
    if entry is MISSING:
        return None
    try:
        kept, owners = entry
        listed = _listing(root)
        if listed is None or len(listed) != len(kept):
            return None
        files = []
        now, seen = time.time_ns(), []
        for (kind, written), (was, rid, ignore, digest, *sig) in zip(listed, kept, strict=True):
            current = vouched(written, sig, digest, _text_digest, now)
            if written != was or current is None:  # a path is of one kind's folder
                return None
            seen.append((was, rid, ignore, digest, *current))
            path = Path(written)
            doc = LazyDocument(written[len(str(root)) + 1 :], digest, _loader(root, path, digest, kind.singleton))
            files.append(SourceFile(kind, rid, path, doc, tuple(ignore)))
        cache.keep([b"y" + f.doc.digest for f in files])  # their parses, for a run that must load again
        if seen != kept:  # a file known by its text (touched, checked out again): known by its signature next time
            cache.put(SLOT, (seen, owners))
        return files, {str(k): (str(f), str(o)) for k, (f, o) in owners.items()}
    except (TypeError, ValueError, LookupError, AttributeError):
        return None  # not an entry of this shape: loaded again


def _listing(root: Path) -> list[tuple[ResourceKind, str]] | None:
    """What loading.kind_files lists, kind by kind, as paths; None when a kind's folder is a symlink
    or cannot be listed (loading then decides what that means)."""
    top = str(root)
    found: list[tuple[ResourceKind, str]] = []
    for kind in KINDS.values():
        if kind.singleton:
            found += [(kind, str(p)) for p in kind_files(root, kind)]
            continue
        folder = f"{top}/{kind.folder}"
        if not os.path.isdir(folder):
            continue
        if os.path.realpath(folder) != folder:
            return None
        try:
            names = sorted(e.name for e in os.scandir(folder) if e.name.endswith((".yaml", ".yml")) and e.name[0] != ".")
        except OSError:
            return None
        found += [(kind, f"{folder}/{name}") for name in names]
    return found


def store(cache: ParseCache, root: Path, files: Sequence[SourceFile], owners: dict[str, tuple[str, str]], begun: int) -> None:
    """Keep files (loaded without a problem, every one of the kinds' folders) for the next run.

    begun: time.time_ns() before the first file was read. A file is vouched for by its signature
    only when it settled before then: one changed after it was read (a long run) holds another
    text than the digest kept names, and its signature, taken now, would say it did not."""
    if _listing(root) is None:
        return  # a symlinked folder, which find refuses: its check, made when the entry is taken, is the one that counts
    kept: list[Entry] = []
    for f in files:
        try:
            info = os.stat(f.path, follow_symlinks=False)
        except OSError:
            return
        if not stat.S_ISREG(info.st_mode) or not f.doc.digest or isinstance(f.doc, LazyDocument):
            return
        kept.append((str(f.path), f.id, list(f.ignore), f.doc.digest, *signature(info, begun)))
    cache.put(SLOT, (kept, owners))


def unchanged(path: str, sig: Sequence[int], digest: bytes, digest_of: Callable[[bytes], bytes]) -> bool:
    """Whether path is still the regular file it was: sig (size, mtime, ctime, inode, or size -1:
    read it again) its signature, or else its bytes of digest_of that give digest."""
    return vouched(path, sig, digest, digest_of, 0) is not None


def vouched(
    path: str, sig: Sequence[int], digest: bytes, digest_of: Callable[[bytes], bytes], now: int
) -> tuple[int, int, int, int] | None:
    """unchanged(), and the signature to know it by from now on (signature(info, now) when its
    bytes vouched for it: taken before they were read); None when it changed."""
    try:
        info = os.stat(path, follow_symlinks=False)
        if not stat.S_ISREG(info.st_mode):
            return None
        found = (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
        if sig[0] != -1 and found == tuple(sig):
            return found
        with open(path, "rb") as handle:
            return signature(info, now) if digest_of(handle.read()) == digest else None
    except (OSError, UnicodeDecodeError):
        return None


def _text_digest(raw: bytes) -> bytes:
    return text_digest(raw.decode("utf-8-sig"))


def _loader(root: Path, path: Path, digest: bytes, singleton: bool) -> Callable[[], Document]:
    def load() -> Document:
        problems: list[Problem] = []
        doc = parse_file(path, root, problems, folder=path.parent)  # a folder _listing found plain
        if doc is None or doc.digest != digest or not isinstance(doc.data, dict):
            shown = display_path(path, root)
            raise CesyncError(f"{shown} changed while cesync was reading the repo; run the command again")
        doc.data.pop(IGNORE_KEY, None)  # as load_sources takes them out
        if not singleton:
            doc.data.pop("id", None)
        return doc

    return load
