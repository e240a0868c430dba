"""--verbose and CESYNC_LOG: each HTTP call and planning decision on standard error, scrubbed;
the emulator's one line per request."""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path

import httpx
import pytest

from cesync.cli.logs import configure_logging
from cesync.core.scrubber import Scrubber
from cesync.emulator import Store, create_app
from cesync.emulator.server import RequestLog
from tests.helpers import cesync_in_process, cesync_process, make_repo

CALL = re.compile(r"DEBUG cesync\.client\.api: GET projects/p/locations/us/apps/a(/\w+)? -> \d{3} in \d+ ms")


@pytest.mark.parametrize("where", ["after", "before"], ids=["plan -v", "-v plan"])
def test_verbose_shows_each_call_and_decision(tmp_path: Path, where: str) -> None:
    root = make_repo(tmp_path, {})
    args = ["plan", "--dir", str(root), "--env", "local"]
    r = cesync_in_process(*(["-v", *args] if where == "before" else [*args, "--verbose"]))
    assert r.returncode == 0, r.stderr
    calls = [line for line in r.stderr.splitlines() if CALL.search(line)]
    assert len(calls) >= 7  # the app and each collection
    assert "cesync.core.passes.compare: plan: tool greet: create (not in the app)" in r.stderr
    assert "Plan for environment" in r.stdout and "DEBUG" not in r.stdout  # logs never mix into the output


def test_quiet_by_default_and_cesync_log_turns_it_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_repo(tmp_path, {})
    assert "DEBUG" not in cesync_in_process("plan", "--dir", str(root), "--env", "local").stderr
    monkeypatch.setenv("CESYNC_LOG", "debug")
    assert CALL.search(cesync_in_process("plan", "--dir", str(root), "--env", "local").stderr)
    monkeypatch.setenv("CESYNC_LOG", "loud")
    r = cesync_in_process("validate", "--dir", str(root))
    assert r.returncode == 0 and "CESYNC_LOG='loud' is not one of debug, info, warning, error" in r.stderr


def test_log_lines_are_scrubbed_traceback_included(capsys: pytest.CaptureFixture[str]) -> None:
    secret = "tok-9f8e7d6c5b4a"
    try:
        configure_logging(1, Scrubber([secret]))
        log = logging.getLogger("cesync.test")
        log.debug("sending %s", secret)
        try:
            raise ValueError(f"bad {secret}")
        except ValueError:
            log.exception("failed")
        logged = capsys.readouterr().err
        assert "sending (sensitive)" in logged and "ValueError: bad (sensitive)" in logged
        assert secret not in logged
    finally:
        configure_logging(0, Scrubber())
    logging.getLogger("cesync.test").debug("not shown")
    assert "not shown" not in capsys.readouterr().err


def test_a_library_warning_is_scrubbed_with_or_without_verbose(capsys: pytest.CaptureFixture[str]) -> None:
    """Not left to logging's handler of last resort, which prints unscrubbed; a library's debug
    lines only with -vv; no global record factory (a record outside the handler keeps its text)."""
    secret = "tok-library-7c6b5a"
    try:
        for verbose in (0, 1, 2):
            configure_logging(verbose, Scrubber([secret]))
            logging.getLogger("some.library").warning("retrying with %s", secret)
            logging.getLogger("some.library").debug("debug %s", secret)
            logged = capsys.readouterr().err
            assert "retrying with (sensitive)" in logged and secret not in logged
            assert ("debug (sensitive)" in logged) == (verbose > 1)
        assert logging.LogRecord("x", logging.INFO, "", 0, secret, None, None).getMessage() == secret
    finally:
        configure_logging(0, Scrubber())
        logging.getLogger().setLevel(logging.WARNING)


def test_the_emulator_logs_one_line_per_request(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("cesync.emulator.test")
    app = RequestLog(create_app(Store(None)), logger)

    async def calls() -> None:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://emulator") as client:
            await client.get("/v1/projects/p/locations/us/apps/a/tools", params={"pageSize": 5})
            await client.post("/v1/projects/p/locations/us/apps", params={"appId": "a"}, json={"displayName": "secret body"})

    with caplog.at_level(logging.INFO, logger=logger.name):
        asyncio.run(calls())
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert re.fullmatch(r"GET /v1/projects/p/locations/us/apps/a/tools\?pageSize=5 -> 404 in \d+ ms", lines[0])
    assert lines[1].startswith("POST /v1/projects/p/locations/us/apps?appId=a -> 200") and "secret body" not in lines[1]


class _Http2Api:
    """An https server on 127.0.0.1 that speaks HTTP/2 (as CES's endpoints do) and answers every
    call NOT_FOUND, recording each request's headers: the h2 library's server side."""

    def __init__(self, cert: tuple[Path, Path]) -> None:
        import socket
        import ssl
        import threading

        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(str(cert[0]), str(cert[1]))
        self.context.set_alpn_protocols(["h2"])
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"https://127.0.0.1:{self.sock.getsockname()[1]}"
        self.headers: list[dict[str, str]] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        import threading

        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _connection(self, raw: object) -> None:
        import json
        import socket

        import h2.config
        import h2.connection
        import h2.events

        assert isinstance(raw, socket.socket)
        try:
            conn = self.context.wrap_socket(raw, server_side=True)
        except OSError:
            return
        h2conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        h2conn.initiate_connection()
        conn.sendall(h2conn.data_to_send())
        body = json.dumps({"error": {"code": 404, "status": "NOT_FOUND", "message": "not found"}}).encode()
        with conn:
            while data := conn.recv(65535):
                for event in h2conn.receive_data(data):
                    if isinstance(event, h2.events.RequestReceived):
                        self.headers.append({str(k): str(v) for k, v in event.headers})
                        h2conn.send_headers(
                            event.stream_id,
                            [(":status", "404"), ("content-type", "application/json"), ("content-length", str(len(body)))],
                        )
                        h2conn.send_data(event.stream_id, body, end_stream=True)
                conn.sendall(h2conn.data_to_send())

    def __enter__(self) -> _Http2Api:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()


def test_very_verbose_never_logs_the_access_token(tmp_path: Path) -> None:
    """-vv shows the libraries' logs; hpack's debug lines are the HTTP/2 header block as sent (the
    Authorization header Huffman-coded, which any HPACK decoder reads back): they must not be among them."""
    import ast

    from hpack import Decoder, HPACKError

    from tests.google_fake import FakeGoogle, Server, self_signed, service_account_file

    cert = self_signed(tmp_path)
    with Server(FakeGoogle()) as tokens, _Http2Api(cert) as api:
        root = make_repo(tmp_path, {})
        config = root / "cesync.yaml"
        config.write_text(config.read_text().replace("endpoint: embedded", f"endpoint: {api.url}"))
        env = {
            "GOOGLE_APPLICATION_CREDENTIALS": str(service_account_file(tmp_path, f"{tokens.url}/token")),
            "SSL_CERT_FILE": str(cert[0]),
            "CESYNC_TRUSTED_HOSTS": "127.0.0.1",
        }
        r = cesync_process(
            "-vv", "plan", "--dir", str(root), "--env", "local", env=env
        )  # its own process: the server's logs apart
    assert api.headers and all(h.get("authorization") == "Bearer tok-1" for h in api.headers), api.headers  # it was sent
    assert "HTTP Request: GET" in r.stderr  # -vv still shows the libraries' logs (httpx's line per call)
    assert "tok-1" not in r.stderr
    for literal in re.findall(r"b'(?:[^'\\]|\\.)*'|b\"(?:[^\"\\]|\\.)*\"", r.stderr):
        try:
            decoded = Decoder().decode(ast.literal_eval(literal))
        except (HPACKError, ValueError, SyntaxError):  # not a header block: nothing to read back
            continue
        assert not any("tok-1" in str(v) for _, v in decoded), decoded


def test_verbose_apply_says_each_decision(tmp_path: Path) -> None:
    """One line per decision, from the module that made it: what was compared, pruned, ordered, applied."""
    root = make_repo(tmp_path, {"tools/extra.yaml": "clientFunction:\n  name: extra\n"})
    first = cesync_in_process("apply", "--dir", str(root), "--env", "local", "--auto-approve", "-v")
    assert first.returncode == 0, first.stderr
    assert "cesync.core.passes.compare: plan: tool extra: create (not in the app)" in first.stderr
    assert "cesync.pipeline.applying: apply: local: 3 change(s), parallelism 8, force False" in first.stderr
    (root / "tools" / "extra.yaml").unlink()
    second = cesync_in_process("apply", "--dir", str(root), "--env", "local", "--auto-approve", "--prune", "-v")
    assert second.returncode == 0, second.stderr
    assert "cesync.core.passes.ownership: plan: tool extra: in the app, not in the repo: delete (prune)" in second.stderr
    assert "cesync.core.passes.order: plan: deletes in this order: tool/extra" in second.stderr
