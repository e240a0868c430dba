"""proto3 JSON rules for CES messages (pure): how values travel on the wire.

Used both ways: the emulator answers with :func:`encode` exactly as the real
service does, and normalization reads answers with :func:`canonical_duration`
and friends. Keys the model does not know are passed through untouched.
"""

from __future__ import annotations

import struct
from decimal import Decimal
from typing import Any

from .models import Kind, ProtoModel, specs
from .models.base import DURATION_RE

__all__ = ["canonical_duration", "duration_nanos", "encode", "float32", "is_default"]


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


def _scalar(value: Any, kind: Kind, enum_table: dict[str, int], enum_int: bool) -> Any:
    if kind is Kind.ENUM:
        if enum_int:
            return enum_table.get(value, value) if isinstance(value, str) else value
        if isinstance(value, int):
            return next((n for n, i in enum_table.items() if i == value), value)
        return value
    if kind is Kind.INT64:
        return str(int(value))
    if kind is Kind.DURATION:
        return canonical_duration(value)
    if kind is Kind.FLOAT:
        return float32(float(value))
    if kind is Kind.DOUBLE:
        return float(value)
    return value


def encode(data: dict[str, Any], model: type[ProtoModel], *, enum_int: bool = False) -> dict[str, Any]:
    """A stored message as the server prints it: defaults omitted, wire spellings."""
    table = specs(model)
    out: dict[str, Any] = {}
    for key, value in data.items():
        spec = table.get(key)
        if spec is None:
            out[key] = value  # unknown to us: pass through
            continue
        if spec.message is not None:
            if spec.repeated:
                if value:
                    out[key] = [encode(v, spec.message, enum_int=enum_int) for v in value]
            elif spec.map:
                if value:
                    out[key] = {k: encode(v, spec.message, enum_int=enum_int) for k, v in value.items()}
            elif value is not None:
                out[key] = encode(value, spec.message, enum_int=enum_int)
            continue
        if spec.repeated:
            if value:
                out[key] = [_scalar(v, spec.kind, spec.enum, enum_int) for v in value]
            continue
        if spec.map or spec.kind in (Kind.STRUCT, Kind.VALUE):
            if value or (spec.kind is Kind.VALUE and value is not None):
                out[key] = value
            continue
        if value is None:
            continue
        scalar = _scalar(value, spec.kind, spec.enum, enum_int)
        if spec.presence or not is_default(scalar, spec.kind, spec.enum):  # after float32 rounding
            out[key] = scalar
    return out
