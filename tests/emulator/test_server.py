"""The emulator serves its own machine's clients, never a web page (issue #34 finding 6).

A page open in a developer's browser could POST to the emulator without a preflight
(text/plain), create a toolset pointing at a loopback service and have ``:executeTool``
call it; and, its DNS name rebound to 127.0.0.1, read ``/admin/state``. Each request here is
what a browser sends for such a page, over a real socket.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cesync.emulator.server import BackgroundServer, LocalOnly

APP = "projects/p/locations/us/apps/a"
TOOLSET = {
    "openApiToolset": {
        "openApiSchema": "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths: {}\n",
        "url": "http://127.0.0.1:2375",
    }
}


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(apps=[APP]) as s:
        yield s


def _create(server: BackgroundServer, rid: str, **headers: str) -> httpx.Response:
    return httpx.post(f"{server.url}/v1/{APP}/toolsets", params={"toolsetId": rid}, content=json.dumps(TOOLSET), headers=headers)


def test_a_cross_site_text_plain_post_is_refused_and_writes_nothing(server: BackgroundServer) -> None:
    """The no-preflight POST of finding 6: a page's fetch(url, {method: 'POST', body: text})."""
    page = {"content-type": "text/plain;charset=UTF-8", "origin": "http://attacker.example", "sec-fetch-site": "cross-site"}
    refused = _create(server, "planted", **page)
    assert refused.status_code == 403 and refused.json()["error"]["status"] == "PERMISSION_DENIED", refused.text
    # Without Origin (a page cannot leave it out, but the body type alone is refused too)
    assert _create(server, "planted", **{"content-type": "text/plain"}).status_code == 415
    for form in ("application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
        assert _create(server, "planted", **{"content-type": form}).status_code == 415
    assert httpx.get(f"{server.url}/v1/{APP}/toolsets/planted").status_code == 404
    assert _create(server, "mine", **{"content-type": "application/json"}).status_code == 200  # its own clients


def test_a_rebound_dns_name_reads_nothing(server: BackgroundServer) -> None:
    for path in ("/admin/state", f"/v1/{APP}"):
        reply = httpx.get(f"{server.url}{path}", headers={"host": f"attacker.example:{server.port}"})
        assert reply.status_code == 403 and "attacker.example" in reply.json()["error"]["message"], reply.text
        assert httpx.get(f"{server.url}{path}", headers={"host": f"localhost:{server.port}"}).status_code == 200


@settings(max_examples=60, deadline=None)
@given(
    name=st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z][a-z0-9-]{0,10}){0,3}", fullmatch=True).filter(lambda n: n != "localhost"),
    origin=st.sampled_from(["http://{h}", "https://{h}", "http://{h}:{p}", "null"]),
)
def test_no_other_name_and_no_other_origin_is_served(name: str, origin: str) -> None:
    """Decided on the request's headers alone: checked on the guard without a socket, every case."""
    guard = LocalOnly(None, "127.0.0.1", 8765, admin=True)

    def said(headers: dict[str, str], path: str = "/v1/x") -> tuple[int, str, str] | None:
        return guard.refusal({"type": "http", "path": path, "headers": [(k.encode(), v.encode()) for k, v in headers.items()]})

    assert said({"host": f"{name}:8765"}) is not None
    assert said({"host": "127.0.0.1:8765", "origin": origin.format(h=name, p=8765)}) is not None
    assert said({"host": "127.0.0.1:8764"}) is not None  # another port: another server's page
    for host in ("127.0.0.1:8765", "localhost:8765", "[::1]:8765"):
        assert said({"host": host}) is None
        assert said({"host": host, "origin": f"http://{host}", "content-type": "application/json"}) is None
    assert said({"host": "127.0.0.1:8765", "sec-fetch-site": "same-site"}) is not None


def test_admin_is_off_unless_asked(server: BackgroundServer) -> None:
    assert httpx.get(f"{server.url}/admin/state").status_code == 200  # the tests' server asks for it
    with BackgroundServer(apps=[APP], admin=False) as closed:
        for method, path in (("GET", "/admin/state"), ("POST", "/admin/faults"), ("GET", "/admin")):
            reply = httpx.request(method, f"{closed.url}{path}", json={})
            assert reply.status_code == 404 and "--admin" in reply.json()["error"]["message"], reply.text
        assert httpx.get(f"{closed.url}/v1/{APP}").status_code == 200


@pytest.mark.parametrize("admin", [False, True])
def test_cesync_emulator_serves_admin_only_with_the_flag(admin: bool) -> None:
    args = [sys.executable, "-m", "cesync.cli", "emulator", "--port", "0", "--quiet", *(["--admin"] if admin else [])]
    with subprocess.Popen(args, stderr=subprocess.PIPE, text=True, env={**os.environ, "NO_COLOR": "1"}) as proc:
        try:
            assert proc.stderr is not None
            found = re.search(r"http://127\.0\.0\.1:(\d+)", proc.stderr.readline())
            assert found
            reply = httpx.get(f"http://127.0.0.1:{found[1]}/admin/state", timeout=30)
            assert reply.status_code == (200 if admin else 404), reply.text
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)


def test_idle_connections_stay_open_as_long_as_at_googles_front_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    """`cesync emulator` and BackgroundServer both keep an idle connection KEEP_ALIVE_SECONDS (610 s,
    Google's front ends': the source is in server.py), not uvicorn's 5 s, after which a client that
    pools connections (googleapiclient's httplib2) broke its next POST (test_discovery_client.py)."""
    import uvicorn

    from cesync.emulator.faults import FaultConfig
    from cesync.emulator.server import KEEP_ALIVE_SECONDS, serve

    configured: list[float] = []

    def run(self: uvicorn.Server, sockets: list[Any] | None = None) -> None:  # uvicorn's, not cesync's: nothing served
        configured.append(self.config.timeout_keep_alive)
        for sock in sockets or []:
            sock.close()

    monkeypatch.setattr(uvicorn.Server, "run", run)
    serve("127.0.0.1", 0, None, FaultConfig(), log_requests=False)
    configured.append(BackgroundServer().server.config.timeout_keep_alive)
    assert configured == [KEEP_ALIVE_SECONDS, KEEP_ALIVE_SECONDS] and KEEP_ALIVE_SECONDS >= 600  # the GFE backend's is 600 s


def test_a_page_s_request_path_is_logged_inert() -> None:
    """`cesync emulator` logs each request's path to the terminal it runs in, the refused ones too.
    A page can send any path (the browser percent-encodes it, the server decodes it): its escape
    sequences and line breaks are logged escaped, never sent to the terminal or a CI runner."""
    from urllib.parse import quote

    from tests.hostile_text import FRAGMENTS, terminal_and_ci_problems

    args = [sys.executable, "-m", "cesync.cli", "emulator", "--port", "0"]
    with subprocess.Popen(args, stderr=subprocess.PIPE, text=True, env={**os.environ, "NO_COLOR": "1"}) as proc:
        assert proc.stderr is not None
        try:
            found = re.search(r"http://127\.0\.0\.1:(\d+)", proc.stderr.readline())
            assert found
            with httpx.Client(base_url=f"http://127.0.0.1:{found[1]}", timeout=30) as client:
                for fragment in FRAGMENTS:
                    request = client.build_request("POST", "/x", content=b"{}", headers={"Origin": "https://attacker.example"})
                    request.url = request.url.copy_with(raw_path=quote(f"/v1/{fragment}?{fragment}", safe="/").encode())
                    assert client.send(request).status_code == 403
        finally:
            proc.send_signal(signal.SIGINT)
            logged = proc.communicate(timeout=30)[1]
    assert logged.count("-> 403") == len(FRAGMENTS), logged  # each request logged ...
    assert terminal_and_ci_problems(logged) == [], logged  # ... inert


@settings(max_examples=60, deadline=None)
@given(address=st.ip_addresses().filter(lambda a: not a.is_loopback), bound=st.sampled_from(["0.0.0.0", "::"]))
def test_a_page_at_any_address_is_not_the_wildcard_emulator_s_own(address: object, bound: str) -> None:
    """Bound to 0.0.0.0 or ::, the emulator answers any address of its machine as Host, but an
    Origin is a page's: one at http://203.0.113.9:8765 (the attacker's server, on the same port) is
    not the emulator's, which serves no page. Older browsers send no Sec-Fetch-Site to stop it."""
    guard = LocalOnly(None, bound, 8765, admin=False)
    shown = f"[{address}]" if ":" in str(address) else str(address)

    def said(headers: dict[str, str]) -> tuple[int, str, str] | None:
        return guard.refusal({"type": "http", "path": "/v1/x", "headers": [(k.encode(), v.encode()) for k, v in headers.items()]})

    assert said({"host": "127.0.0.1:8765", "origin": f"http://{shown}:8765"}) is not None
    assert said({"host": f"{shown}:8765"}) is None  # a client of the machine's network, as --host asked
    assert said({"host": "127.0.0.1:8765", "origin": "http://127.0.0.1:8765"}) is None


def test_a_body_without_a_type_is_refused_as_a_page_could_send_it(server: BackgroundServer) -> None:
    """fetch(url, {method: "POST", mode: "no-cors", body: new Blob([json])}) sends a body with no
    Content-Type: a request a page makes without a preflight. Every JSON client names its type."""
    url = f"{server.url}/v1/{APP}/tools"
    untyped = httpx.post(url, params={"toolId": "untyped"}, content=b'{"clientFunction": {"name": "x"}}')
    assert untyped.status_code == 415 and "Content-Type" in untyped.json()["error"]["message"], untyped.text
    assert httpx.get(f"{url}/untyped").status_code == 404  # nothing written
    typed = httpx.post(url, params={"toolId": "typed"}, json={"clientFunction": {"name": "x"}})
    assert typed.status_code == 200, typed.text
    assert httpx.post(f"{server.url}/v1/{APP}/tools/typed:nothing").status_code != 415  # no body, no type needed
