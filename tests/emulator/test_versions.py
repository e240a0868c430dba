"""App versions on the emulator (emulator/versions.py): UpdateAppVersion and AppVersion.updateTime,
which Google's discovery document ces.v1.json (rev 20261016) has and the 0.7.2 protos lack."""

from __future__ import annotations

import httpx
import pytest

from cesync.emulator.server import BackgroundServer

APP = "projects/p/locations/us/apps/a"


@pytest.fixture
def client(emulator: BackgroundServer) -> httpx.Client:
    return httpx.Client(base_url=f"{emulator.url}/v1/")


def test_a_version_is_updated_through_its_mask(client: httpx.Client) -> None:
    made = client.post(f"{APP}/versions", params={"appVersionId": "v1"}, json={"displayName": "one", "description": "d"})
    assert made.status_code == 200, made.text
    version = made.json()
    assert version["updateTime"] == version["createTime"]

    renamed = client.patch(f"{APP}/versions/v1", params={"updateMask": "displayName"}, json={"displayName": "first"})
    assert renamed.status_code == 200, renamed.text
    after = renamed.json()
    assert (after["displayName"], after["description"]) == ("first", "d")
    assert after["updateTime"] > version["updateTime"] and after["etag"] != version["etag"]
    assert after["snapshot"] == version["snapshot"] and after["createTime"] == version["createTime"]
    assert client.get(f"{APP}/versions/v1").json() == after

    # "If empty, fields display_name and description will be updated."
    both = client.patch(f"{APP}/versions/v1", json={**after, "displayName": "again", "description": "e"}).json()
    assert (both["displayName"], both["description"]) == ("again", "e")
    assert both["snapshot"] == version["snapshot"]  # echoed back, output only: ignored


@pytest.mark.parametrize(
    ("path", "params", "status"),
    [
        ("versions/v1", {"updateMask": "snapshot"}, "INVALID_ARGUMENT"),
        ("versions/v1", {"updateMask": "colour"}, "INVALID_ARGUMENT"),
        ("versions/nope", {"updateMask": "displayName"}, "NOT_FOUND"),
    ],
)
def test_what_a_version_update_cannot_do_is_refused(client: httpx.Client, path: str, params: dict[str, str], status: str) -> None:
    assert client.post(f"{APP}/versions", params={"appVersionId": "v1"}, json={}).status_code == 200
    refused = client.patch(f"{APP}/{path}", params=params, json={"displayName": "x"})
    assert refused.json()["error"]["status"] == status, refused.text
