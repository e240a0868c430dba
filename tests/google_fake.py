"""A fake of the Google side of authentication, for tests and the plain-install smoke test.

Only the standard library and ``cryptography`` (a dependency of google-auth) are used,
so this runs in a virtualenv that has cesync without its test extras.
"""

from __future__ import annotations

import datetime
import json
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

QUOTA_PROJECT = "billing-project"
TARGET = "deployer@p.iam.gserviceaccount.com"


@dataclass
class FakeGoogle:
    """Token endpoint (/token), IAM generateAccessToken and a CES stand-in that records headers."""

    token_delay: float = 0.0
    api_status: list[int] = field(default_factory=list)  # statuses to answer API calls with, in order, then 200
    tokens: list[str] = field(default_factory=list)
    impersonations: list[str] = field(default_factory=list)
    api_calls: list[dict[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, status: int, payload: dict[str, Any]) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path == "/token":
                    form = parse_qs(body.decode())
                    assert form["grant_type"] == ["urn:ietf:params:oauth:grant-type:jwt-bearer"], form
                    time.sleep(fake.token_delay)
                    with fake.lock:
                        token = f"tok-{len(fake.tokens) + 1}"
                        fake.tokens.append(token)
                    return self._answer(200, {"access_token": token, "expires_in": 3600, "token_type": "Bearer"})
                if self.path.endswith(":generateAccessToken"):
                    source = self.headers.get("Authorization", "")
                    if not source.startswith("Bearer tok-"):
                        return self._answer(401, {"error": {"code": 401, "status": "UNAUTHENTICATED", "message": "no"}})
                    with fake.lock:
                        token = f"imp-{len(fake.impersonations) + 1}"
                        fake.impersonations.append(token)
                    expiry = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
                    return self._answer(200, {"accessToken": token, "expireTime": expiry.strftime("%Y-%m-%dT%H:%M:%SZ")})
                self.do_GET()

            def do_GET(self) -> None:
                with fake.lock:
                    fake.api_calls.append({k.lower(): v for k, v in self.headers.items()})
                    status = fake.api_status.pop(0) if fake.api_status else 200
                if status != 200:
                    return self._answer(status, {"error": {"code": status, "status": "UNAUTHENTICATED", "message": "expired"}})
                self._answer(200, {})

        return Handler


class Server:
    """A ThreadingHTTPServer on 127.0.0.1 (https when given a certificate)."""

    def __init__(self, fake: FakeGoogle, cert: tuple[Path, Path] | None = None) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), fake.handler())
        scheme = "http"
        if cert:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(str(cert[0]), str(cert[1]))
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _private_key() -> Any:
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def service_account_file(folder: Path, token_uri: str, **extra: str) -> Path:
    """A service-account key file whose token_uri points at the fake token endpoint."""
    from cryptography.hazmat.primitives import serialization

    pem = _private_key().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    info = {
        "type": "service_account",
        "project_id": "p",
        "private_key_id": "k1",
        "private_key": pem.decode(),
        "client_email": "ci@p.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": token_uri,
        **extra,
    }
    path = folder / "key.json"
    path.write_text(json.dumps(info), encoding="utf-8")
    return path


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key (the CA file a client trusts via SSL_CERT_FILE)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import NameOID

    key = _private_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "cert.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path
