"""What every list the emulator serves takes (emulator/lists.py): exactly the query parameters the API
description gives it, each honoured or refused; any query a client sends is a listing or a client
error, whatever the stored values hold."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cesync.emulator.errors import RpcError
from cesync.emulator.lists import LISTS, SPECS, handled, listing
from cesync.emulator.methods import query_parameters
from cesync.emulator.server import BackgroundServer

APP = "projects/p/locations/us/apps/a"
_RUNS = {f"{APP}/evaluationRuns/r1": {"createTime": "2026-01-01T00:00:00Z", "initiatedBy": "a@b.c"}}
_FIELDS = ["display_name", "create_time", "action", "done", "evaluation_datasets", "request.evaluations", "include_system_tools"]
_TERM = st.tuples(
    st.sampled_from(_FIELDS),
    st.sampled_from([":", "=", "!=", "<", ">="]),
    st.sampled_from(["x", "true", '"a b"', "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.123456789Z", "yesterday"]),
).map("".join)
_FILTER_TEXT = st.one_of(st.text(max_size=40), st.lists(_TERM, min_size=1, max_size=3).map(" AND ".join))

_BETA_ONLY = (
    "evaluations",
    "evaluationDatasets",
    "evaluationExpectations",
    "scheduledEvaluationRuns",
    "evaluationRuns",
    "evaluationResults",
)


@pytest.mark.parametrize(
    ("collection", "version"),
    [(c, v) for c in LISTS for v in ("v1", "v1beta") if v == "v1beta" or c not in _BETA_ONLY],
)
def test_every_documented_parameter_of_a_list_is_honoured(collection: str, version: str) -> None:
    """The query parameters the API description (the discovery documents' methods) gives each list the
    emulator serves are exactly those its table handles: none ignored, none the method lacks."""
    documented = query_parameters(version, SPECS[collection].method_id)
    assert documented, SPECS[collection].method_id
    assert documented == handled(collection)


def test_a_documented_parameter_the_table_lacks_is_refused_not_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    """When a newer description gives a list a parameter the emulator's table does not take yet, a call
    with it is INVALID_ARGUMENT saying so."""
    from cesync.emulator import lists

    monkeypatch.setattr(lists, "query_parameters", lambda version, method: frozenset({"pageSize", "newThing"}))
    with pytest.raises(RpcError) as refused:
        listing("changelogs", {"newThing": "1"})
    assert refused.value.status == "INVALID_ARGUMENT" and "the emulator does not honour it" in refused.value.message


_TIMES = st.sampled_from(
    ["2026-01-01T00:00:00Z", "2026-06-01T12:00:00.5Z", "2025-12-31T23:59:59+01:00", "yesterday", "", "2026-01-01T00:00:00"]
)
_ANY_RESOURCE = st.fixed_dictionaries(
    {"name": st.text(alphabet="abc/", max_size=8)},
    optional={
        "displayName": st.text(max_size=6),
        "createTime": _TIMES,
        "updateTime": _TIMES,
        "nextScheduledExecutionTime": _TIMES,
        "lastCompletedRun": st.sampled_from([f"{APP}/evaluationRuns/r1", "gone"]),
        "done": st.booleans(),
        "action": st.sampled_from(["Create", "Update"]),
    },
)
_ORDER_TEXTS = st.sampled_from(
    [
        "name",
        "name desc",
        "create_time",
        "create_time asc",
        "update_time desc",
        "next_scheduled_execution",
        "last_completed_run.create_time",
        "name, create_time desc",
        "",
        ",",
    ]
)
_QUERY = st.dictionaries(
    st.sampled_from(
        [
            "filter",
            "orderBy",
            "evaluationFilter",
            "evaluationRunFilter",
            "lastTenResults",
            "returnPartialSuccess",
            "source",
            "fields",
        ]
    ),
    st.one_of(_FILTER_TEXT, _ORDER_TEXTS, st.sampled_from(["true", "false", "maybe"])),
    max_size=3,
)


@given(collection=st.sampled_from(LISTS), query=_QUERY, resources=st.lists(_ANY_RESOURCE, max_size=5))
def test_any_list_query_is_a_listing_or_a_client_error(
    collection: str, query: dict[str, str], resources: list[dict[str, Any]]
) -> None:
    """Whatever a client asks any list, the emulator answers INVALID_ARGUMENT (or UNIMPLEMENTED where
    the document says so) or lists what it keeps, in order, whatever the stored values hold: never an
    exception the server would turn into a 500."""
    version = "v1beta" if collection in _BETA_ONLY else "v1"
    try:
        asked = listing(collection, query, _RUNS.get, version)
    except RpcError as exc:
        assert exc.status in ("INVALID_ARGUMENT", "UNIMPLEMENTED"), exc
        return
    arranged = asked.arranged(resources, lambda r: r)
    assert all(r in resources for r in arranged) and len(arranged) <= len(resources)
    if asked.keep is None:
        assert len(arranged) == len(resources)


@pytest.fixture(scope="module")
def datasets() -> Iterator[tuple[httpx.Client, list[dict[str, Any]]]]:
    """Four evaluation datasets made one after the other, the first and third updated since."""
    with BackgroundServer(auto_create_apps=True) as server, httpx.Client(base_url=f"{server.url}/v1beta/") as client:
        for i in range(4):
            made = client.post(
                f"{APP}/evaluationDatasets", params={"evaluationDatasetId": f"d{i}"}, json={"displayName": f"D{i}"}
            )
            assert made.status_code == 200, made.text
        for i in (2, 0):
            patched = client.patch(
                f"{APP}/evaluationDatasets/d{i}", params={"updateMask": "displayName"}, json={"displayName": f"E{i}"}
            )
            assert patched.status_code == 200, patched.text
        yield client, client.get(f"{APP}/evaluationDatasets", params={"orderBy": "name"}).json()["evaluationDatasets"]


_DOCUMENTED = {"name": ("name", "asc"), "create_time": ("createTime", "desc"), "update_time": ("updateTime", "desc")}


@given(
    order=st.lists(
        st.tuples(st.sampled_from([*_DOCUMENTED, "display_name"]), st.sampled_from(["", " asc", " desc"])), min_size=0, max_size=2
    ),
    size=st.integers(min_value=1, max_value=3),
)
def test_an_evaluation_list_orders_as_documented(
    datasets: tuple[httpx.Client, list[dict[str, Any]]], order: list[tuple[str, str]], size: int
) -> None:
    """ListEvaluationDatasets' orderBy (ces.v1beta.json): "name", "create_time" and "update_time"; time
    fields descending, name ascending; "update_time" when none is asked for. A model of that text,
    against the emulator over HTTP: the asked order across pages, or INVALID_ARGUMENT."""
    client, every = datasets
    text = ", ".join(f + d for f, d in order)
    valid = all(f in _DOCUMENTED and d.strip() in ("", _DOCUMENTED[f][1]) for f, d in order)
    first = client.get(f"{APP}/evaluationDatasets", params={"pageSize": size, **({"orderBy": text} if text else {})})
    if not valid:
        assert first.status_code == 400 and first.json()["error"]["status"] == "INVALID_ARGUMENT", (text, first.text)
        return
    got, token = list(first.json()["evaluationDatasets"]), first.json().get("nextPageToken")
    while token:
        page = client.get(
            f"{APP}/evaluationDatasets", params={"pageSize": size, "pageToken": token, **({"orderBy": text} if text else {})}
        )
        got += page.json()["evaluationDatasets"]
        token = page.json().get("nextPageToken")
    assert sorted(d["name"] for d in got) == sorted(d["name"] for d in every)
    keys = [_DOCUMENTED[f] for f, _ in order] or [_DOCUMENTED["update_time"]]
    for a, b in itertools.pairwise(got):
        for key, direction in keys:
            if a[key] != b[key]:
                assert (a[key] > b[key]) == (direction == "desc"), (text, a[key], b[key])
                break


def test_an_evaluation_list_without_an_order_is_by_update_time(datasets: tuple[httpx.Client, list[dict[str, Any]]]) -> None:
    client, _ = datasets
    listed = client.get(f"{APP}/evaluationDatasets").json()["evaluationDatasets"]
    assert [d["name"].rsplit("/", 1)[-1] for d in listed] == ["d0", "d2", "d3", "d1"]  # updated last, first
