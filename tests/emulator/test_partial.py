"""The `fields` system parameter: a partial response keeps what the selector names, and a selector
that does not parse is INVALID_ARGUMENT, never an exception the server turns into a 500."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cesync.emulator.errors import RpcError
from cesync.emulator.partial import parse_fields, project

names = st.from_regex(r"[a-z][A-Za-z0-9_]{0,6}", fullmatch=True)
leaf = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
values = st.recursive(leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=4), max_leaves=12)
objects = st.dictionaries(names, values, max_size=5)


@given(objects)
def test_star_keeps_everything(value: dict[str, Any]) -> None:
    assert project(value, parse_fields("*")) == value


@given(objects, st.data())
def test_top_level_names_keep_those_fields(value: dict[str, Any], data: st.DataObject) -> None:
    chosen = data.draw(st.lists(names, min_size=1, max_size=4, unique=True))
    assert project(value, parse_fields(",".join(chosen))) == {k: v for k, v in value.items() if k in chosen}


@given(st.lists(st.dictionaries(names, values, max_size=3), max_size=4), names, names)
def test_a_sub_selection_applies_to_each_element_of_a_list(items: list[dict[str, Any]], a: str, b: str) -> None:
    body = {"items": items, "nextPageToken": "t", "other": 1}
    expected = {"items": [{k: v for k, v in i.items() if k in (a, b)} for i in items], "nextPageToken": "t"}
    assert project(body, parse_fields(f"items({a},{b}),nextPageToken")) == expected
    assert project(body, parse_fields(f"items/{a},items/{b},nextPageToken")) == expected


@given(st.text(max_size=40))
def test_any_selector_parses_or_is_invalid_argument(text: str) -> None:
    try:
        parse_fields(text)
    except RpcError as exc:
        assert exc.status == "INVALID_ARGUMENT"


@pytest.mark.parametrize("bad", ["", "a(", "a)", "a,,b", "a/", "(a)", "a b", "a(b))"])
def test_malformed_selectors_are_refused(bad: str) -> None:
    with pytest.raises(RpcError, match="Invalid field selection"):
        parse_fields(bad)


def test_a_version_list_without_its_snapshots_is_the_list_projected() -> None:
    """The versions list leaves the snapshots out before printing when fields does not select them:
    the same answer as the whole list with the selection applied, for each selection."""
    import httpx

    from cesync.emulator.server import BackgroundServer

    parent = "projects/p/locations/us/apps/a"
    with BackgroundServer(auto_create_apps=True) as server, httpx.Client(base_url=f"{server.url}/v1/") as http:
        http.post(f"{parent}/tools", params={"toolId": "t"}, json={"displayName": "t", "clientFunction": {"name": "f"}})
        for i in range(3):
            made = http.post(f"{parent}/versions", json={"displayName": f"v{i}", "description": 'say "snapshot": no'})
            assert made.status_code == 200, made.text
        whole = http.get(f"{parent}/versions").json()
        assert all("snapshot" in v for v in whole["appVersions"])
        for fields in (
            "appVersions(name,description,createTime),nextPageToken",
            "appVersions(snapshot)",
            "appVersions",
            "*",
            "nextPageToken",
            "appVersions/name",
        ):
            got = http.get(f"{parent}/versions", params={"fields": fields})
            assert got.json() == project(whole, parse_fields(fields)), fields


scalars = st.dictionaries(names.filter(lambda n: n != "snapshot"), leaf, max_size=4)


@given(scalars, values, st.dictionaries(names.filter(lambda n: n != "snapshot"), values, max_size=2))
def test_a_text_cut_after_the_snapshot_s_name_is_the_version_without_it(
    head: dict[str, Any], snapshot: Any, nested: dict[str, Any]
) -> None:
    """What store.page's cut leaves of a version (its text up to '"snapshot":') gives what the whole
    text does without the snapshot; a version whose fields before it are not all scalars is read
    whole (None)."""
    import json

    from cesync.emulator.partial import head_before, without_last

    for before in (head, {**head, **nested}):
        text = json.dumps({**before, "snapshot": snapshot}, separators=(",", ":"))
        cut = text[: text.index('"snapshot":') + len('"snapshot":')]
        got = head_before(cut, "snapshot")
        if any(isinstance(v, (dict, list)) for v in before.values()):
            assert got is None
        else:
            assert got is not None and json.loads(got) == json.loads(without_last(text, "snapshot")) == before
