"""The applied record in an app version's description: written, read back, and never trusted blindly."""

from __future__ import annotations

import base64
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cesync.core.record import MARKER, parse_record, record_body

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


@given(owned=keys, others=keys)
def test_a_record_reads_back_as_written(owned: set[str], others: set[str]) -> None:
    present = owned | others
    snapshot = {
        c: [{"name": f"{APP}/{c}/{k.split('/')[1]}"} for k in present if k.split("/")[0] == kind] for c, kind in KIND_OF.items()
    }
    body = record_body("dev", SHA, False, "sha256:" + "0" * 64, "1.2.3", owned, present)
    assert len(body["displayName"]) <= 100 and body["displayName"] == "cesync applied 0123456 to dev"
    record = parse_record(version(body, snapshot), KIND_OF)
    assert record is not None
    assert (record.env, record.commit, record.digest, record.cesync_version) == ("dev", SHA, "sha256:" + "0" * 64, "1.2.3")
    assert record.owned == frozenset(owned) and record.version == f"{APP}/versions/v1"


def test_the_shorter_way_to_name_what_is_owned_is_kept() -> None:
    owned = {f"tool/t{i}" for i in range(500)}
    body = record_body("dev", SHA, False, "sha256:" + "0" * 64, "1", owned, owned | {"agent/hand"})
    assert '"notOwned"' in body["description"] and '"owned"' not in body["description"]


@pytest.mark.parametrize(
    "description",
    [
        "made by hand",
        MARKER + "not json",
        MARKER + '{"v": 2, "env": "dev"}',
        MARKER + '{"v": 1}',
        MARKER + '{"v": 1, "env": "dev", "owned": "!!"}',
        MARKER + '{"v": 1, "env": "dev", "owned": "' + base64.b64encode(zlib.compress(b"\0" * (64 << 20))).decode() + '"}',
    ],
    ids=["another version", "not json", "a later format", "no env", "not base64", "inflates without end"],
)
def test_a_version_that_is_no_record_of_ours_is_none(description: str) -> None:
    assert parse_record(version({"description": description}), KIND_OF) is None
