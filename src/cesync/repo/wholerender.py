"""An environment's whole render kept between runs, taken when nothing it was rendered from changed.

A warm run of an unchanged repo spent most of its time proving, file by file, that each render
the cache holds (repo/rendercache.py) still holds: substituting each file's variables to make
its key, and reading each of its includes again. This entry proves it once for the whole repo.
The render of an environment is a function of: the API description in use, the environment
(its name, app, urls and skip list, from ``cesync.yaml``), the resources the repo holds, each
resource file's name and text, the value of each ``${NAME}`` the files name, and the text of
each file they include. The entry keeps a digest of all of them, the names and the includes,
and the renders; a run that finds the same digest takes the renders as they are.

An include is checked as the render found it: the path its ``file:`` gives, resolved below the
repo now, must still be the regular file it was, holding the same bytes. The bytes are read
again unless the file's size, modification and change times and inode are those seen when they
were read. The render is kept only when each include was last changed well before the render
began: its bytes, read again to be kept, are then those the render read, and a file written
in the same instant as it was read, which could differ and look the same, is never vouched for
by its times (git's test for an unchanged file).

Only a render without a problem is kept, never one that a sensitive value took part in (the
digest would let a reader of the cache test guesses of it), and nothing when the repo had a file
that did not load. The entry lives in the parse cache's store (core/parsecache.py), signed on
disk by repo/cache.py.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..api.descriptors import description_id
from ..api.resource import Position, Resource
from ..core.parsecache import MISSING, ParseCache
from ..core.yamlfile import Path_
from ..errors import Problem
from . import wholeload
from .environments import EnvTarget
from .files import in_git_dir, resolved_below
from .loading import SourceFile
from .rendercache import Scope, variables
from .templating import INCLUDABLE

__all__ = ["FileRender", "Kept", "find", "store"]

# One file's render for one environment: the body (None if it has problems), the problems, and
# each reference to another resource as (the data path its position is taken from, (kind, id)).
FileRender = tuple[dict[str, Any] | None, list[Problem], list[tuple[Path_, tuple[str, str]]]]
# An include as it was read: (the path its file: gave, below the repo; the file that resolved to;
# size, mtime and ctime in ns, inode; the digest of its bytes)
Include = tuple[str, str, int, int, int, int, bytes]

MARSHAL_VERSION = 2


class Kept(list[FileRender]):
    """The renders of a whole environment as a run kept them, which collected them without a problem."""

    def resources(self, files: Sequence[SourceFile], env: EnvTarget) -> list[Resource]:
        """The resources, as Repo._collect makes them of renders without a problem."""
        out = [
            Resource(src.kind, src.id, body, source=Position(src.doc.file))
            for src, (body, _, _) in zip(files, self, strict=True)
            if body is not None and src.key not in env.skip
        ]
        return sorted(out, key=lambda d: d.key)


def slot(env: EnvTarget) -> bytes:
    """Where an environment's entry is kept (one per environment)."""
    return b"w" + hashlib.blake2b(env.name.encode("utf-8", "surrogatepass"), digest_size=20).digest()


def find(
    cache: ParseCache, root: Path, files: Sequence[SourceFile], config_digest: bytes, env: EnvTarget, scope: Scope
) -> list[FileRender] | None:
    """The renders of files kept by the run before, if nothing they were rendered from changed."""
    entry = cache.get(slot(env))
    if entry is MISSING:
        return None
    try:
        digest, names, includes, renders = entry
        values = _values(env, names, scope)
        if values is None or len(renders) != len(files) or not _same_includes(root, includes):
            return None
        if digest != _digest(files, config_digest, env, scope, values, [i[6] for i in includes]):
            return None
        return Kept((body, [], [(tuple(path), (kind, rid)) for path, (kind, rid) in refs]) for body, refs in renders)
    except (TypeError, ValueError, LookupError, AttributeError):
        return None  # not an entry of this shape: rendered again


def store(
    cache: ParseCache,
    root: Path,
    files: Sequence[SourceFile],
    config_digest: bytes,
    env: EnvTarget,
    scope: Scope,
    renders: Sequence[FileRender],
    begun: int,
) -> None:
    """Keep renders (files', in order) when none has a problem and everything they came from can be checked.

    begun: time.time_ns() before the render read its first include."""
    if not config_digest or any(problems or body is None for body, problems, _ in renders):
        return
    if any(not f.doc.digest or not f.doc.text for f in files):
        return
    names = sorted({name for f in files for name in variables(f)})
    values = _values(env, names, scope)
    includes = _includes(root, files, begun)
    if values is None or includes is None:
        return
    kept = [(body, [(list(path), list(target)) for path, target in refs]) for body, _, refs in renders]
    digest = _digest(files, config_digest, env, scope, values, [i[6] for i in includes])
    cache.put(slot(env), (digest, names, includes, kept))


def _values(env: EnvTarget, names: list[str], scope: Scope) -> list[str | None] | None:
    """Each name's value in env, or None when one is sensitive, or a sensitive value is in one of
    them or in the environment's urls (a url takes ${NAME} too): never part of a digest."""
    values = [env.var(name) for name in names]
    if any(name in env.sensitive or name in scope.names for name in names):
        return None
    texts = [*(v for v in values if v is not None), *env.urls.values()]
    if any(s in text.encode("utf-8", "surrogatepass") for text in texts for s in scope.secrets):
        return None
    return values


def _digest(
    files: Sequence[SourceFile],
    config_digest: bytes,
    env: EnvTarget,
    scope: Scope,
    values: list[str | None],
    includes: list[bytes],
) -> bytes:
    described = (env.name, env.parent, sorted(env.urls.items()), sorted(env.skip))
    parts: list[Any] = [description_id(), config_digest, scope.known_id, marshal.dumps(described, MARSHAL_VERSION)]
    parts.append(marshal.dumps([(f.kind.name, f.id, f.doc.file, f.doc.digest, f.ignore) for f in files], MARSHAL_VERSION))
    parts += [marshal.dumps(values, MARSHAL_VERSION), *includes]
    digest = hashlib.blake2b(digest_size=20)
    for part in parts:
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.digest()


def _file_mentions(data: Any) -> Iterator[str]:
    """Every {file: ...} text in data under a key templating includes (Expander.expand): the includes
    a render can make, and perhaps more. Elsewhere (a schema's default takes any value) it is data,
    which the render never reads as a path."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key in INCLUDABLE and isinstance(value, dict) and set(value) == {"file"}:
                    yield value["file"] if isinstance(value["file"], str) else ""
                else:
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)


def _includes(root: Path, files: Sequence[SourceFile], begun: int) -> list[Include] | None:
    """Each include of files as it is now, or None when one cannot be checked again, or may have
    changed since the render began: its bytes now need not be those the render read."""
    found: dict[str, Include] = {}
    for f in files:
        for rel in _file_mentions(f.doc.data):
            written = str(f.path.parent / rel)
            if written in found:
                continue
            if not rel or "${" in rel or Path(rel).is_absolute():
                return None
            resolved = resolved_below(Path(written), root)
            if not resolved.is_relative_to(root) or in_git_dir(resolved, root, resolved=True):
                return None  # no file the render read (it refuses these): never opened here
            target = str(resolved)
            try:
                if not stat.S_ISREG(os.stat(target).st_mode):
                    return None  # nor a FIFO or a device, which an open or a read would wait on
                with open(target, "rb") as handle:
                    info = os.fstat(handle.fileno())
                    raw = handle.read()
            except OSError:
                return None
            if not stat.S_ISREG(info.st_mode):
                return None
            sig = wholeload.signature(info, begun)
            if sig[0] == -1:
                return None
            found[written] = (written, target, *sig, _bytes_digest(raw))
    return [found[k] for k in sorted(found)]


def _same_includes(root: Path, includes: list[Any]) -> bool:
    folders: dict[str, str] = {}  # each folder resolved once (an include's own name is looked at alone)
    for written, target, size, mtime, ctime, inode, digest in includes:
        folder, _, name = written.rpartition("/")
        if folder not in folders:
            folders[folder] = str(resolved_below(Path(folder), root))
        if f"{folders[folder]}/{name}" != target or name in ("", ".", ".."):
            return False  # not the file it was (a symlink now is no regular file to wholeload.unchanged)
        if not wholeload.unchanged(target, (size, mtime, ctime, inode), digest, _bytes_digest):
            return False
    return True


def _bytes_digest(raw: bytes) -> bytes:
    return hashlib.blake2b(raw, digest_size=20).digest()
