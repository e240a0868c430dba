"""The API shortcut (app._ApiShortcut) answers as Starlette's router does, for what it takes and what it leaves."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.requests import Request

from cesync.emulator.app import _query, create_app
from cesync.emulator.store import Store

APP = "projects/p/locations/us/apps/a"
REQUESTS = [
    ("GET", f"/v1/{APP}/tools"),
    ("GET", f"/v1beta/{APP}/tools/end_session"),
    ("GET", f"/v1/{APP}/tools/nope"),
    ("POST", f"/v1/{APP}/tools?toolId=bad%20id"),
    ("PATCH", f"/v1/{APP}/tools/end_session"),
    ("DELETE", f"/v1/{APP}/agents/none"),
    ("GET", "/v1/"),
    ("GET", "/v1/%0A"),
    ("GET", f"/v1/{APP}/tools%0A"),
    ("HEAD", f"/v1/{APP}/tools"),
    ("PUT", f"/v1/{APP}/tools"),
    ("OPTIONS", "/v1beta/x"),
    ("GET", "/v2/x"),
    ("GET", "/v1"),
]


def _answers(through_router: bool) -> list[tuple[int, bytes, str | None]]:
    async def go() -> list[tuple[int, bytes, str | None]]:
        app = create_app(Store(auto_create_apps=True))
        target = app.router if through_router else app  # the router alone: no shortcut in front
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=target), base_url="http://emu") as client:
            out = []
            for method, path in REQUESTS:
                r = await client.request(method, path)
                content = re.sub(rb'"(createTime|updateTime|etag)":"[^"]*"', rb'"\1":"-"', r.content)  # two apps' own
                out.append((r.status_code, content, r.headers.get("content-type")))
            return out

    return asyncio.run(go())


@pytest.mark.parametrize("index", range(len(REQUESTS)), ids=[f"{m} {p[:40]}" for m, p in REQUESTS])
def test_shortcut_answers_as_the_router(index: int) -> None:
    assert _ANSWERS[0][index] == _ANSWERS[1][index]


_ANSWERS = (_answers(through_router=False), _answers(through_router=True))


@given(raw=st.text(alphabet="ab=&%2B+;$é ", max_size=20))
def test_query_as_starlette_reads_it(raw: str) -> None:
    scope = {"type": "http", "query_string": raw.encode("latin-1", "replace")}
    assert _query(Request(scope)) == dict(Request(scope).query_params.items())
