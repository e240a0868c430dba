"""The real Google path from a plain install: ``python -m tests.smoke_google``.

.ci/run runs this with a virtualenv that has cesync installed WITHOUT extras, so a
dependency that only the test extras pull in (as ``requests`` once was) fails here.
A service-account key whose token_uri is a local fake token endpoint; ``cesync plan``
against an https stand-in for CES (a self-signed certificate trusted through
SSL_CERT_FILE, its host through CESYNC_TRUSTED_HOSTS); every call must carry
``Authorization: Bearer <that token>`` and ``x-goog-user-project``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.google_fake import QUOTA_PROJECT, FakeGoogle, Server, self_signed, service_account_file

TOOL = """pythonFunction:
  name: greet
  pythonCode: |
    def greet(name: str) -> dict:
        return {"greeting": "Hello " + name}
"""


def run(folder: Path, python: str = sys.executable) -> FakeGoogle:
    fake = FakeGoogle()
    cert = self_signed(folder)
    with Server(fake) as tokens, Server(fake, cert) as api:
        key = service_account_file(folder, f"{tokens.url}/token")
        repo = folder / "repo"
        (repo / "tools").mkdir(parents=True)
        (repo / "cesync.yaml").write_text(
            f"version: 1\nenvironments:\n  prod:\n    endpoint: {api.url}\n    project: p\n    location: us\n    app: a\n"
        )
        (repo / "tools" / "greet.yaml").write_text(TOOL)
        env = {k: v for k, v in os.environ.items() if k not in ("CES_EMULATOR_HOST", "CESYNC_ENV")}
        env.update(
            GOOGLE_APPLICATION_CREDENTIALS=str(key),
            GOOGLE_CLOUD_QUOTA_PROJECT=QUOTA_PROJECT,
            SSL_CERT_FILE=str(cert[0]),
            CESYNC_TRUSTED_HOSTS="127.0.0.1",
        )
        result = subprocess.run(
            [python, "-m", "cesync.cli", "plan", "--dir", str(repo)], env=env, capture_output=True, text=True, timeout=120
        )
    assert result.returncode == 0, f"cesync plan failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    assert "greet" in result.stdout, result.stdout
    assert fake.tokens == ["tok-1"], fake.tokens
    assert fake.api_calls, "cesync made no API call"
    for headers in fake.api_calls:
        assert headers.get("authorization") == "Bearer tok-1", headers
        assert headers.get("x-goog-user-project") == QUOTA_PROJECT, headers
    return fake


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="cesync-smoke-") as tmp:
        calls = run(Path(tmp)).api_calls
    print(f"smoke: Google path from a plain install OK ({len(calls)} API calls signed with the fake token)")
