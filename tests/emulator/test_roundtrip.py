"""roundtrip.round_trip gives json_format's ParseDict-then-MessageToDict, or declines (Unsure): never another answer."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.protobuf import json_format, timestamp_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cesync.api import descriptors as api
from cesync.api.kinds import KINDS
from cesync.emulator.errors import RpcError
from cesync.emulator.roundtrip import Unsure, _timestamp, round_trip
from cesync.emulator.wire import checked, descriptor, parse, to_data
from tests.strategies import json_values, pruned, resource_bodies


def _reference(collection: str, body: Any, ints: bool) -> dict[str, Any] | None:
    """json_format's answer (None when it refuses the body)."""
    message = api.message_class(descriptor(collection).full_name)()
    try:
        json_format.ParseDict(body, message, descriptor_pool=api.pool())
        return json_format.MessageToDict(message, use_integers_for_enums=ints)
    except Exception:  # whatever json_format raises, the fast way must decline
        return None


def _same_or_unsure(collection: str, body: Any, ints: bool) -> bool:
    """Whether round_trip agreed (same dict, same key order); False when it declined."""
    expected = _reference(collection, body, ints)
    try:
        got = round_trip(descriptor(collection), body, ints)
    except Unsure:
        return False
    assert expected is not None, f"json_format refuses {body!r}; round_trip answered {got!r}"
    assert json.dumps(got) == json.dumps(expected)
    return True


def _mangled(value: Any, how: int) -> Any:
    """value with one kind of damage everywhere: wrong types, nulls, strings for numbers, emptied values."""
    if isinstance(value, dict):
        return {k: _mangled(v, how) for k, v in value.items()}
    if isinstance(value, list):
        return [_mangled(v, how) for v in value]
    if isinstance(value, bool):
        return [None, "true", 1, value, not value][how % 5]
    if isinstance(value, (int, float)):
        return [str(value), -value, value * 1e40, 0, float(value)][how % 5]
    if isinstance(value, str):
        return [None, 7, "", value + "\ud800", value.upper()][how % 5]
    return value


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=resource_bodies(), ints=st.booleans())
def test_valid_bodies_as_json_format_prints_them(case: tuple[str, tuple[dict[str, Any], dict[str, Any]]], ints: bool) -> None:
    kind_name, (a, b) = case
    collection = KINDS[kind_name].collection
    _same_or_unsure(collection, a, ints)
    _same_or_unsure(collection, b, ints)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=resource_bodies(), how=st.integers(0, 4), ints=st.booleans())
def test_damaged_bodies_declined_or_as_json_format(
    case: tuple[str, tuple[dict[str, Any], dict[str, Any]]], how: int, ints: bool
) -> None:
    kind_name, (a, _) = case
    _same_or_unsure(KINDS[kind_name].collection, _mangled(a, how), ints)


@settings(max_examples=200, deadline=None)
@given(value=json_values(), key=st.sampled_from(["displayName", "timeout", "executionType", "clientFunction", "toolFakeConfig"]))
def test_free_json_declined_or_as_json_format(value: Any, key: str) -> None:
    _same_or_unsure("tools", {key: value}, False)


def test_the_common_bodies_take_the_fast_way() -> None:
    """What apply sends most (Python functions and OpenAPI tools with a timeout, enums, int64, maps) is not declined."""
    bodies = [
        {"pythonFunction": {"name": "f", "pythonCode": "def f():\n    pass\n"}, "timeout": "30s"},
        {"openApiTool": {"openApiSchema": "{}", "name": "o", "url": "https://x"}, "timeout": "1.5s"},
        {
            "clientFunction": {
                "name": "c",
                "parameters": {
                    "type": "OBJECT",
                    "properties": {k: {"type": "STRING", "maxItems": "3"} for k in "zyxabc"},
                    "required": ["a"],
                },
            },
            "executionType": 2,
            "createTime": "2026-01-02T03:04:05.123000Z",
        },
    ]
    for body in bodies:
        for ints in (False, True):
            assert _same_or_unsure("tools", body, ints), body


@settings(max_examples=300, deadline=None)
@given(
    moment=st.datetimes(
        min_value=__import__("datetime").datetime(1, 1, 1), max_value=__import__("datetime").datetime(9999, 12, 31)
    ),
    digits=st.text(alphabet="0123456789", min_size=0, max_size=10),
)
def test_timestamps_as_protobuf_prints_them(moment: Any, digits: str) -> None:
    text = moment.strftime("%Y-%m-%dT%H:%M:%S") + (f".{digits}" if digits else "") + "Z"
    stamp = timestamp_pb2.Timestamp()
    try:
        stamp.FromJsonString(text)
        expected: str | None = stamp.ToJsonString()
    except ValueError:
        expected = None
    try:
        got = _timestamp(text)
    except Unsure:
        return
    assert got == expected


@pytest.mark.parametrize("text", ["2026-02-30T00:00:00Z", "2026-01-01T24:00:00Z", "2026-1-01T00:00:00Z", "2026-01-01T00:00:60Z"])
def test_odd_timestamps_declined(text: str) -> None:
    with pytest.raises(Unsure):
        _timestamp(text)


def _outcome(call: Any) -> Any:
    try:
        return call()
    except RpcError as exc:
        return ("error", exc.status, exc.message, exc.details)
    except Exception as exc:  # json_format's own failures (upb refuses lone surrogates in enum names): both ways alike
        return ("crash", type(exc).__name__)


# What a request may echo that the server sets (output-only fields, name, etag), right or wrong.
ECHOED = st.dictionaries(
    st.sampled_from(["createTime", "update_time", "generatedSummary", "name", "etag", "bogus"]),
    st.one_of(st.just("2026-01-02T03:04:05.5Z"), st.just("x"), st.integers(), st.none(), st.just({"bogus": 1})),
    max_size=3,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=resource_bodies(),
    drop=st.lists(st.booleans(), max_size=5),
    how=st.integers(0, 6),
    complete=st.booleans(),
    echoed=ECHOED,
)
def test_checked_as_parse_then_print(
    case: tuple[str, tuple[dict[str, Any], dict[str, Any]]], drop: list[bool], how: int, complete: bool, echoed: dict[str, Any]
) -> None:
    """wire.checked gives parse's data, or its error word for word (unknown and required fields, names, types, oneof)."""
    kind_name, (a, _) = case
    collection = KINDS[kind_name].collection
    body = pruned(a, drop) if how == 5 else a if how == 6 else _mangled(a, how)
    body = {**body, **echoed}
    if how % 2:
        body = json.loads(json.dumps(body).replace('"projects/', '"x/'))
    old = _outcome(lambda: to_data(parse(collection, body, complete=complete)))
    new = _outcome(lambda: checked(collection, body, complete=complete).data)
    assert json.dumps(new) == json.dumps(old)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=resource_bodies(), drop=st.lists(st.booleans(), max_size=5), name=st.sampled_from(["x", "projects"]))
def test_missing_read_from_data_as_from_the_message(
    case: tuple[str, tuple[dict[str, Any], dict[str, Any]]], drop: list[bool], name: str
) -> None:
    """wire._missing_data on a message's printed data finds _missing's violations, in the same order."""
    from cesync.emulator.wire import _missing, _missing_data

    kind_name, (a, _) = case
    collection = KINDS[kind_name].collection
    body = pruned(json.loads(json.dumps(a).replace('"projects/', f'"{name}/')), drop)
    try:
        message = parse(collection, body, complete=False)
    except RpcError:
        return
    assert _missing_data(descriptor(collection), to_data(message), "tool") == _missing(message, "tool")
