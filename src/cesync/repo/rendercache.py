"""A file's render kept between runs, looked up by everything it was rendered from.

Rendering one file for one environment (includes, refs, key linting, the model and its checks:
``repo._checked``) is most of a warm ``validate`` or ``plan``, and its result is a function of:
the file's text and name (what its problems are positioned in), its data after ``${VAR}``
substitution, the app it renders for, the resources the repo holds (a ``{ref:}`` names one of
them), the API description in use, and the name and text of each file it includes. The first
six make the key. The includes are checked at every use, by including each again (the same
rules and refusals as the render: a file outside the repo, inside .git or gone is never taken
from here) and comparing the file it reaches now and what that holds with what the render
read. Only renders with no problem are kept: a problem may be an include missing now
and there later.

The entries live in the parse cache's store (core/parsecache.py), signed on disk by repo/cache.py:
what a run used is what the next one finds.
"""

from __future__ import annotations

import hashlib
import logging
import marshal
from collections.abc import Iterable, Iterator
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

from ..api.descriptors import description_id
from ..api.jsonvalue import value_at
from ..core.parsecache import MISSING, ParseCache
from ..core.yamlfile import Path_, text_digest
from ..errors import Problem
from .loading import SourceFile
from .templating import VAR_RE, Expander

__all__ = ["Rendered", "Scope", "find", "known_id", "render_key", "scope", "store", "variables"]

log = logging.getLogger(__name__)

Key = tuple[str, str]
# One file's render: the body, its problems, the checks' findings on a body without problems,
# each name of this app's resources in the expanded data (path, (kind, id)), the paths where a
# {ref:} stood, and the expanded data itself (None when it came from here: it is not kept).
Rendered = tuple[dict[str, Any] | None, list[Problem], list[Problem], list[tuple[Path_, Key]], set[Path_], Any]
# An include as the render read it: (the key it stood under, its path in the data, what file: said,
# the file it reached (its problems name it), the digest of the text it gave)
Include = tuple[str, Path_, str, str, bytes]
MARSHAL_VERSION = 2  # no references between objects: equal data, equal bytes


@dataclass(frozen=True)
class Scope:
    """What renders of one environment are cached under: the repo's resources (known_id), and the
    environment's sensitive values, which never reach a cache file: a render whose data holds one
    is not kept, and not looked up (its key would be a digest of the value, which a reader of
    the file could try guesses against)."""

    known_id: bytes
    secrets: tuple[bytes, ...] = ()
    # the variables marked sensitive (in any environment): a file that names one is rendered without
    # the cache, since its value is not always text to look for (${PIN} in a number field is a number)
    names: frozenset[str] = frozenset()


def scope(known: Iterable[Key], secrets: Iterable[str], names: Iterable[str] = ()) -> Scope:
    return Scope(known_id(known), tuple(v.encode("utf-8", "surrogatepass") for v in secrets if v), frozenset(names))


def variables(src: SourceFile) -> Iterator[str]:
    """The ${NAME}s src's data may substitute (and perhaps more): those of its text, and of its
    data's strings when the text has an escape (YAML reads "\\x24{NAME}" as ${NAME})."""
    texts: Iterable[Any] = [src.doc.text]
    if "\\" in src.doc.text:
        texts = _strings(src.doc.data)
    for text in texts:
        for match in VAR_RE.finditer(text):
            if not match.group(1):
                yield match.group(2)


def _strings(data: Any) -> Iterator[str]:
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def known_id(known: Iterable[Key]) -> bytes:
    """A digest of what the repo holds (the refs' targets), once per render of the repo."""
    return hashlib.blake2b(marshal.dumps(sorted(known), MARSHAL_VERSION), digest_size=20).digest()


def render_key(cache: ParseCache, src: SourceFile, data: Any, parent: str, within: Scope) -> bytes | None:
    """The key of src's render from data for parent, or None (not cachable: no digest of its text,
    data marshal cannot write, or data that holds a sensitive value)."""
    if not src.doc.digest or (within.names and not within.names.isdisjoint(variables(src))):
        return None
    try:
        substituted = marshal.dumps(data, MARSHAL_VERSION)
    except ValueError:
        return None
    if any(secret in substituted for secret in within.secrets):  # marshal writes a text as its UTF-8
        return None
    parts = [
        description_id(),
        src.kind.name.encode(),
        src.id.encode(),
        src.doc.file.encode(),  # a renamed file (its id given by 'id:') reports its problems under its new name
        src.doc.digest,
        parent.encode(),
        within.known_id,
        substituted,
    ]
    digest = hashlib.blake2b(digest_size=20)
    for part in parts:
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return b"r" + digest.digest()


def find(
    cache: ParseCache, key: bytes, root: Path, src: SourceFile, parent: str, known: set[Key]
) -> tuple[bool, Rendered] | None:
    """(whether the render used the app's name, the render) kept under key, if every file it
    included still gives what it gave; else None."""
    entry = cache.get(key)
    if entry is MISSING:
        return None
    try:
        used_parent, body, checked, named, ref_paths, includes = entry
        if not _same_includes(root, src, parent, known, includes):
            log.debug("render cache: %s %s: an include changed", src.kind, src.id)
            return None
        rendered: Rendered = (
            body,
            [],
            [Problem(*p) for p in checked],
            [(tuple(path), (kind, rid)) for path, (kind, rid) in named],
            {tuple(p) for p in ref_paths},
            None,
        )
    except (TypeError, ValueError, LookupError, AttributeError):
        return None  # not an entry of this shape: rendered again
    return bool(used_parent), rendered


def store(
    cache: ParseCache, key: bytes, root: Path, src: SourceFile, data: Any, parent: str, used_parent: bool, rendered: Rendered
) -> None:
    """Keep a render without problems, with the file each of its includes reached and what it gave."""
    body, problems, checked, named, ref_paths, expanded = rendered
    if body is None or problems or expanded is None:
        return
    includes: list[Include] = []
    expander = Expander(root, src.path.parent, src.doc, parent, set())
    for here in _include_paths(data, expanded):
        given, text = value_at(data, here), value_at(expanded, here)
        if not (isinstance(given, dict) and isinstance(given.get("file"), str) and isinstance(text, str)):
            return  # an include this module cannot check again: not kept
        again = _include(expander, (str(here[-1]), here, given["file"]))
        if again is None or again[0] != text_digest(text):
            return  # not what the render read (changed meanwhile): not kept
        includes.append((str(here[-1]), here, given["file"], again[1], again[0]))
    cache.put(key, (used_parent, body, [astuple(p) for p in checked], named, sorted(ref_paths, key=repr), includes))


def _include_paths(data: Any, expanded: Any, path: Path_ = ()) -> list[Path_]:
    """Where data holds {file: ...} and the expanded data holds text: an include the render made."""
    if isinstance(data, dict):
        if set(data) == {"file"} and isinstance(expanded, str):
            return [path]
        if not isinstance(expanded, dict):
            return []
        return [p for k, v in data.items() if k in expanded for p in _include_paths(v, expanded[k], (*path, k))]
    if isinstance(data, list) and isinstance(expanded, list) and len(data) == len(expanded):
        return [p for i, (v, e) in enumerate(zip(data, expanded, strict=True)) for p in _include_paths(v, e, (*path, i))]
    return []


def _same_includes(root: Path, src: SourceFile, parent: str, known: set[Key], includes: list[Any]) -> bool:
    if not includes:
        return True
    expander = Expander(root, src.path.parent, src.doc, parent, known)
    return all(_include(expander, (key, tuple(here), rel)) == (digest, shown) for key, here, rel, shown, digest in includes)


def _include(expander: Expander, include: tuple[str, Path_, str]) -> tuple[bytes, str] | None:
    """(the digest of the text, the file it came from) of an include made again, or None (a problem)."""
    key, here, rel = include
    text = expander.include(key, {"file": rel}, here)
    if expander.problems or not isinstance(text, str):
        return None
    return text_digest(text), expander.includes[here][0]
