"""`cesync emulator` as a process: the address it prints is one it serves, and a port in use is one error."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.helpers import cesync_process


def test_a_port_in_use_is_one_error_and_no_address_is_announced() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        result = cesync_process("emulator", "--port", str(port), "--quiet")
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"error: cannot serve on 127.0.0.1:{port}: Address already in use; pick another --port (--port 0 takes a free one)"
    ]


def test_port_zero_announces_the_port_it_bound_and_serves_there() -> None:
    env = {**os.environ, "NO_COLOR": "1"}
    with subprocess.Popen(
        [sys.executable, "-m", "cesync.cli", "emulator", "--port", "0", "--quiet", "--app", "projects/p/locations/us/apps/a"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    ) as proc:
        try:
            assert proc.stderr is not None
            line = proc.stderr.readline()  # the banner comes once the socket is bound
            found = re.match(r"CES emulator on http://127\.0\.0\.1:(\d+) \(export CES_EMULATOR_HOST=127\.0\.0\.1:(\d+),", line)
            assert found and found[1] == found[2] and found[1] != "0", line
            reply = httpx.get(f"http://127.0.0.1:{found[1]}/v1/projects/p/locations/us/apps/a", timeout=30)
            assert reply.status_code == 200 and reply.json()["name"] == "projects/p/locations/us/apps/a", reply.text
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)


def test_the_emulator_s_connections_do_not_wait_on_nagle() -> None:
    """Each connection `cesync emulator` accepts has TCP_NODELAY, as asyncio gives a socket it binds
    itself: without it every answer waited for the client's delayed ACK (a GET took 64 ms, not 23)."""
    import asyncio
    import socket

    from cesync.emulator.server import listening_socket

    async def accepted_nodelay() -> int:
        seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            seen.set_result(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        sock = listening_socket("127.0.0.1", 0)
        server = await asyncio.start_server(handle, sock=sock)
        async with server:
            _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
            flag = await asyncio.wait_for(seen, 10)
            writer.close()
        return flag

    assert asyncio.run(accepted_nodelay()) != 0


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--port", "99999"], "Invalid value for '--port': 99999 is not in the range 0<=x<=65535"),
        (["--host", "nosuchhost.invalid", "--port", "0"], "give --host an address of this machine"),
    ],
)
def test_a_bad_port_or_host_is_one_error_naming_the_fix(args: list[str], said: str) -> None:
    result = cesync_process("emulator", *args, "--quiet")
    assert result.returncode == 1 and said in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert "internal error" not in result.stderr and ("--port" in said or "another --port" not in result.stderr)


def test_api_description_makes_the_emulator_serve_a_newer_revision_s_fields(tmp_path: Path) -> None:
    """--api-description: the newer discovery document's fields and enum values are accepted, stored and
    served back (without it, the same PATCH is INVALID_ARGUMENT: the field is unknown)."""
    import json

    from tests.api_newer import newer

    document = tmp_path / "ces.v1.json"
    document.write_text(json.dumps(newer()))
    env = {**os.environ, "NO_COLOR": "1"}
    app = "projects/p/locations/us/apps/a"
    settings = {"modelSettings": {"model": "m", "reasoningBudget": 512, "thinkingLevel": "MAXIMAL"}}
    for extra, status in (([], 400), (["--api-description", str(document)], 200)):
        command = [sys.executable, "-m", "cesync.cli", "emulator", "--port", "0", "--quiet", "--app", app, *extra]
        with subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env) as proc:
            try:
                assert proc.stderr is not None
                found = re.search(r"http://127\.0\.0\.1:(\d+)", proc.stderr.readline())
                assert found, "no banner"
                url = f"http://127.0.0.1:{found[1]}/v1/{app}"
                reply = httpx.patch(url, params={"updateMask": "modelSettings"}, json=settings, timeout=30)
                assert reply.status_code == status, reply.text
                if status == 200:
                    assert httpx.get(url, timeout=30).json()["modelSettings"] == settings["modelSettings"]
            finally:
                proc.send_signal(signal.SIGINT)
                proc.wait(timeout=30)


def test_api_description_that_is_no_discovery_document_is_one_error(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"version": "v1", "name": "other"}')
    result = cesync_process("emulator", "--port", "0", "--quiet", "--api-description", str(tmp_path / "x.json"))
    assert result.returncode == 1 and "not Google's discovery document for CES v1" in result.stderr, result.stderr
