"""Every method of Google's discovery documents for CES (ces.v1.json, ces.v1beta.json in
google-api-python-client 2.202.0) is either served by the emulator or answered UNIMPLEMENTED in
Google's error shape, listed in emulator/unserved.py and in docs/emulator.md."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import googleapiclient
import httpx
import pytest

from cesync.emulator.server import BackgroundServer
from cesync.emulator.unserved import PREFIX, UNSERVED

DOCUMENTS = Path(googleapiclient.__file__).parent / "discovery_cache" / "documents"
ROOT = Path(__file__).resolve().parents[2]


def methods(version: str) -> Iterator[dict[str, Any]]:
    def walk(resources: dict[str, Any]) -> Iterator[dict[str, Any]]:
        for resource in resources.values():
            yield from resource.get("methods", {}).values()
            yield from walk(resource.get("resources", {}))

    yield from walk(json.loads((DOCUMENTS / f"ces.{version}.json").read_text())["resources"])


def unserved(version: str) -> set[str]:
    return {PREFIX + m for m in UNSERVED} & {str(m["id"]) for m in methods(version)}


def test_every_unserved_method_is_one_of_the_documents() -> None:
    assert {PREFIX + m for m in UNSERVED} <= unserved("v1") | unserved("v1beta")


@pytest.mark.parametrize("version", ["v1", "v1beta"])
def test_every_method_of_the_discovery_document_is_served_or_unimplemented(version: str) -> None:
    fill = {"projectsId": "p", "locationsId": "us", "appsId": "a"}
    with BackgroundServer(auto_create_apps=True) as server, httpx.Client(base_url=server.url) as client:
        for method in methods(version):
            path = re.sub(r"\{(\w+)\}", lambda m: fill.get(m.group(1), "x"), method["flatPath"])
            body = {} if method["httpMethod"] in ("POST", "PATCH") else None
            answer = client.request(method["httpMethod"], f"/{path}", json=body)
            error = answer.json().get("error", {}) if answer.status_code >= 400 else {}
            if method["id"] in unserved(version):
                assert (answer.status_code, error.get("status")) == (501, "UNIMPLEMENTED"), (method["id"], answer.text)
                assert method["id"] in error["message"]
            else:  # served: any answer but "no such method" (a 404 here names a resource that does not exist)
                assert error.get("status") != "UNIMPLEMENTED", method["id"]
                assert not re.search(r"no method|unknown resource", error.get("message", "")), (method["id"], answer.text)


def test_the_docs_list_what_is_not_served() -> None:
    page = (ROOT / "docs" / "emulator.md").read_text()
    section = page.split("## What it does not serve", 1)[1].split("\n## ", 1)[0]
    for method_id in UNSERVED:
        assert f"`{method_id}`" in section, method_id
