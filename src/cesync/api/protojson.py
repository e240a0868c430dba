"""proto3 JSON rules for CES messages (pure): how values travel on the wire.

Normalization reads answers with :func:`canonical_duration` and friends (its walk is
:mod:`cesync.core.normalize` on :mod:`cesync.core.walk`). The emulator does not use this module:
it prints and parses with protobuf's own JSON support over the descriptor snapshot.
"""

from __future__ import annotations

import struct
from decimal import Decimal
from typing import Any

from ..models import Kind
from ..models.base import DURATION_RE

__all__ = ["canonical_duration", "duration_nanos", "float32", "is_default", "json_name"]


def json_name(name: str) -> str:
    """A field's JSON name from its proto (snake_case) name: ``tool_ids`` -> ``toolIds``."""
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def duration_nanos(text: str) -> int:
    match = DURATION_RE.match(text.strip())
    if not match:
        raise ValueError(f"not a Duration: {text!r}")
    sign, seconds, frac = match.groups()
    nanos = int(seconds) * 1_000_000_000 + int((frac or "").ljust(9, "0") or 0)
    return -nanos if sign else nanos


def canonical_duration(text: str) -> str:
    """The server's spelling: 0, 3, 6 or 9 fractional digits ("1.5s" -> "1.500s")."""
    nanos = duration_nanos(text)
    sign = "-" if nanos < 0 else ""
    seconds, frac = divmod(abs(nanos), 1_000_000_000)
    if frac == 0:
        return f"{sign}{seconds}s"
    for digits, unit in ((3, 1_000_000), (6, 1_000)):
        if frac % unit == 0:
            return f"{sign}{seconds}.{frac // unit:0{digits}d}s"
    return f"{sign}{seconds}.{frac:09d}s"


def float32(value: float) -> float:
    """A double as the server stores it in a 32-bit float, printed shortest."""
    rounded: float = struct.unpack("f", struct.pack("f", value))[0]
    # The shortest decimal that maps to the same float32 (like the server prints it).
    for digits in range(1, 10):
        candidate = float(f"{rounded:.{digits}g}")
        if struct.unpack("f", struct.pack("f", candidate))[0] == rounded:
            return candidate
    return float(Decimal(rounded))


def is_default(value: Any, kind: Kind, enum_table: dict[str, int] | None = None) -> bool:
    """True when proto3 JSON would omit this scalar value."""
    if value is None:
        return True
    if kind is Kind.ENUM:
        return value == 0 or (isinstance(value, str) and value.endswith("_UNSPECIFIED"))
    if kind is Kind.BOOL:
        return value is False
    if kind in (Kind.INT32, Kind.INT64, Kind.DOUBLE, Kind.FLOAT):
        try:
            return bool(float(value) == 0)
        except (TypeError, ValueError):
            return False
    if kind in (Kind.STRING, Kind.BYTES):
        return bool(value == "")
    if kind is Kind.DURATION:
        return False  # a message type: presence counts
    return False
