"""--target: which resources a command is limited to (pure).

A target is ``ID``, ``KIND/ID`` or ``COLLECTION/ID`` (``tool/x``, ``tools/x``,
``toolset/y``, ``toolsets/y``); one that names nothing is an error with the closest
known names, never a silently empty plan.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from ..api.kinds import KINDS, by_word
from ..api.words import spoken
from ..errors import CesyncError

__all__ = ["resolve_targets", "target_keys"]


def resolve_targets(
    targets: Iterable[str], known: Iterable[tuple[str, str]], flag: str = "--target"
) -> set[tuple[str, str]] | None:
    """(kind, id) of every resource the targets name; None when no target was given.

    flag: the option the targets came from, as its errors name it (``--focus`` of graph)."""
    given = [t.strip() for t in targets if t.strip()]
    if not given:
        return None
    known = set(known)
    out: set[tuple[str, str]] = set()
    bad: list[str] = []
    for t in given:
        kind, _, rid = t.rpartition("/")
        named = by_word(kind)
        if kind and named is None:
            bad.append(f"{t!r}: the kind must be {spoken((f'{k}(s)' for k in KINDS), 'or')}")
            continue
        hits = {(k, i) for k, i in known if i == rid and (named is None or named.name == k)}
        if not hits:
            # suggestions in the form given (tools/ID, or a bare ID), each once; at 0.5 a shared
            # 'tools/' prefix alone made any tool a suggestion
            names = sorted({f"{KINDS[k].collection}/{i}" for k, i in known} if kind else {i for _, i in known})
            close = difflib.get_close_matches(t, names, n=3, cutoff=0.7)
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            bad.append(f"{t!r} names no {spoken(KINDS, 'or')} of the repo or the app{hint}")
            continue
        out |= hits
    if bad:
        raise CesyncError(f"unknown {flag} " + "; ".join(bad))
    return out


def target_keys(selected: set[tuple[str, str]] | None) -> set[str] | None:
    """The selection as plan keys (kind/id), which build_plan also accepts as targets."""
    return None if selected is None else {f"{k}/{i}" for k, i in selected}
