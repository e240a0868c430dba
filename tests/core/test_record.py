"""The applied record in an app version's description: written, read back, and never trusted blindly."""

from __future__ import annotations

import base64
import json
import zlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cesync.core.record import MARKER, parse_record, record_body, record_key, untrusted

KIND_OF = {"tools": "tool", "agents": "agent", "toolsets": "toolset"}
SHA = "0123456789abcdef0123456789abcdef01234567"
APP = "projects/p/locations/us/apps/a"


def version(body: dict[str, str], snapshot: dict[str, object] | None = None) -> dict[str, object]:
    return {"name": f"{APP}/versions/v1", "createTime": "2026-01-02T03:04:05Z", **body, "snapshot": snapshot or {}}


keys = st.sets(
    st.builds(
        lambda k, i: f"{k}/{i}",
        st.sampled_from(["tool", "agent", "toolset"]),
        st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True),
    ),
    max_size=60,
)


AT = "2026-01-02T03:04:00+00:00"


def body_of(owned: set[str], key: bytes = b"", **kw: Any) -> dict[str, str]:
    args: dict[str, Any] = {"written_at": AT, "key": key, **kw}
    return record_body(APP, "dev", SHA, False, "sha256:" + "0" * 64, "1.2.3", owned, **args)


@given(owned=keys, others=keys)
def test_a_record_reads_back_as_written(owned: set[str], others: set[str]) -> None:
    present = owned | others
    snapshot = {
        c: [{"name": f"{APP}/{c}/{k.split('/')[1]}"} for k in present if k.split("/")[0] == kind] for c, kind in KIND_OF.items()
    }
    body = body_of(owned)
    assert len(body["displayName"]) <= 100 and body["displayName"] == "cesync applied 0123456 to dev"
    record = parse_record(version(body, snapshot), KIND_OF)
    assert record is not None
    assert (record.env, record.commit, record.digest, record.cesync_version) == ("dev", SHA, "sha256:" + "0" * 64, "1.2.3")
    assert record.owned == frozenset(owned) and record.version == f"{APP}/versions/v1"


@given(owned=keys, others=keys)
def test_what_is_owned_is_named_never_read_off_the_snapshot(owned: set[str], others: set[str]) -> None:
    """A resource in the version's snapshot that the record does not name (made by hand during the
    apply, so the snapshot holds it) is never owned."""
    snapshot = {
        c: [{"name": f"{APP}/{c}/{k.split('/')[1]}"} for k in owned | others if k.startswith(kind)] for c, kind in KIND_OF.items()
    }
    record = parse_record(version(body_of(owned), snapshot), KIND_OF)
    assert record is not None and record.owned == frozenset(owned)


KEY = record_key(b"pipeline secret")


def test_a_sealed_record_is_trusted_under_its_key_only() -> None:
    record = parse_record(version(body_of({"tool/a"}, KEY)), KIND_OF)
    assert record is not None and untrusted(record, KEY) == ""
    assert "seal does not match" in untrusted(record, record_key(b"another"))
    assert untrusted(record, b"") == ""  # no key: nothing can be checked (plan says so: ownership.UNSEALED)


@pytest.mark.parametrize("forge", ["unsealed", "owned widened", "commit moved", "another app", "copied later"])
def test_a_forged_record_is_untrusted(forge: str) -> None:
    """What a console user can write without the key is never trusted: every field is under the seal,
    and so is the app; a verbatim copy in a version made later is a copy."""
    body = body_of({"tool/a"}, b"" if forge == "unsealed" else KEY)
    line = body["description"].split(MARKER, 1)[1]
    outer = json.loads(line)
    data = json.loads(outer["r"])
    if forge == "owned widened":
        wider = json.loads(json.loads(body_of({"tool/a", "tool/hand"})["description"].split(MARKER, 1)[1])["r"])
        assert wider["owned"] != data["owned"]
        data["owned"] = wider["owned"]
        outer["r"] = json.dumps(data, sort_keys=True, separators=(",", ":"))
    elif forge == "commit moved":
        data["commit"] = "f" * 40
        outer["r"] = json.dumps(data, sort_keys=True, separators=(",", ":"))
    forged = {**body, "description": body["description"].split(MARKER, 1)[0] + MARKER + json.dumps(outer)}
    v = version(forged)
    if forge == "another app":
        v["name"] = "projects/p/locations/us/apps/other/versions/v9"
    if forge == "copied later":
        v["createTime"] = "2026-01-02T05:00:00Z"
    record = parse_record(v, KIND_OF)
    assert record is not None and untrusted(record, KEY) != ""


@pytest.mark.parametrize(
    "description",
    [
        "made by hand",
        MARKER + "not json",
        MARKER + '{"v": 3, "env": "dev"}',
        MARKER + '{"v": 1}',
    ],
    ids=["another version", "not json", "a later format", "no env"],
)
def test_a_version_that_is_no_record_of_ours_is_none(description: str) -> None:
    assert parse_record(version({"description": description}), KIND_OF) is None


BOMB = base64.b64encode(zlib.compress(b"\0" * (64 << 20))).decode()


@pytest.mark.parametrize(
    "line",
    [
        '{"v": 1, "env": "dev", "owned": "!!"}',
        '{"v": 1, "env": "dev", "owned": "' + BOMB + '"}',
        '{"r": ' + json.dumps(json.dumps({"v": 2, "env": "dev", "owned": "!!"})) + "}",
        '{"r": ' + json.dumps(json.dumps({"v": 2, "env": "dev", "owned": BOMB})) + "}",
        '{"r": ' + json.dumps(json.dumps({"v": 2, "env": "dev", "owned": "", "sums": BOMB})) + "}",
    ],
    ids=["not base64", "inflates without end", "format 2 not base64", "format 2 inflates without end", "sums inflate"],
)
def test_a_record_whose_lists_cannot_be_read_owns_nothing(line: str) -> None:
    """Its owned list is read only when asked for (a head is parsed, and its seal checked, without
    inflating it), and then, damaged or over the bound, it names nothing: prune deletes less."""
    record = parse_record(version({"description": MARKER + line}), KIND_OF)
    assert record is not None and record.owned == frozenset() and record.sums == {}


def test_a_format_1_record_that_read_ownership_off_its_snapshot_owns_nothing() -> None:
    """Its snapshot held whatever the app held when the version was made, a tool made by hand during
    that apply included: prune must not take it for cesync's."""
    legacy = {
        "v": 1,
        "env": "dev",
        "commit": SHA,
        "digest": "d",
        "cesync": "0",
        "notOwned": base64.b64encode(zlib.compress(b"")).decode(),
    }
    snapshot = {"tools": [{"name": f"{APP}/tools/hand"}]}
    record = parse_record(version({"description": MARKER + json.dumps(legacy)}, snapshot), KIND_OF)
    assert record is not None and record.legacy and record.owned == frozenset()
    named = {**legacy, "owned": base64.b64encode(zlib.compress(b"tool/a")).decode()}
    del named["notOwned"]
    record = parse_record(version({"description": MARKER + json.dumps(named)}, snapshot), KIND_OF)
    assert record is not None and record.owned == frozenset({"tool/a"})


@given(depth=st.integers(900, 40_000), inner=st.booleans())
def test_a_version_s_record_nested_deep_is_no_record(depth: int, inner: bool) -> None:
    """A console user can make a version whose description holds the marker and JSON nested
    tens of thousands deep (outside, or in the signed text): no record, never RecursionError,
    which stopped every plan, apply and drift check of the app."""
    deep = "[" * depth + "]" * depth
    line = json.dumps({"r": deep}) if inner else deep
    assert parse_record({"name": "v", "description": f"x\n{MARKER}{line}"}, {}) is None


@given(namespace=st.text(max_size=60))
def test_a_record_naming_an_owner_cesync_yaml_could_not_is_none(namespace: str) -> None:
    """A record's owner is what some repo's cesync.yaml says (a short lowercase name): a record
    naming any other (control characters, markup, a megabyte) is none of cesync's."""
    import re

    body = record_body(APP, "dev", "", False, "", "x", ["tool/t"], written_at="2026-01-01T00:00:00+00:00", namespace=namespace)
    found = parse_record(version(body), KIND_OF)
    if namespace == "" or re.fullmatch(r"[a-z][a-z0-9-]{0,39}", namespace):
        assert found is not None and found.namespace == namespace
    else:
        assert found is None
