"""import-archive: a small CES app export made here, as a folder and as a zip, into a working repo."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from cesync.emulator.store import Store
from tests.helpers import cesync

ORDERS_SCHEMA = """\
openapi: 3.0.3
info: {title: Orders, version: "1"}
servers:
  - url: $env_var
paths:
  /orders/{id}:
    get:
      operationId: getOrder
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
      responses: {"200": {description: An order}}
"""

CODE = 'def get_weather(city: str) -> dict:\n    """Weather for a city."""\n    return {"city": city, "sky": "clear"}\n'


def make_export(root: Path) -> Path:
    """The layout of a console export / cxas-scrapi pull, wrapped in the app's folder."""
    app = root / "Support_Bot"
    files = {
        "app.json": json.dumps({"displayName": "Support Bot"}),
        "environment.json": json.dumps(
            {
                "tools": {
                    "lookup_order": {
                        "openApiTool": {
                            "url": "https://orders.dev.example",
                            "apiAuthentication": {"apiKeyConfig": {"apiKeySecretVersion": "projects/dev/secrets/k/versions/1"}},
                        }
                    }
                },
                "toolsets": {"catalog": {"open_api_toolset.url": "https://catalog.dev.example"}},
                "agents": {"root": {"model": "x"}},
            }
        ),
        "tools/get_weather/get_weather.json": json.dumps(
            {
                "name": "projects/old/locations/us/apps/x/tools/get_weather",
                "displayName": "get_weather",
                "createTime": "2026-01-01T00:00:00Z",
                "pythonFunction": {"name": "get_weather", "pythonCode": "tools/get_weather/python_function/python_code.py"},
            }
        ),
        "tools/get_weather/python_function/python_code.py": CODE,
        "tools/lookup_order/lookup_order.json": json.dumps(
            {
                "displayName": "lookup_order",
                "openApiTool": {
                    "name": "lookup_order",
                    "openApiSchema": "tools/lookup_order/open_api_tool/open_api_schema.yaml",
                    "apiAuthentication": {
                        "apiKeyConfig": {"keyName": "X-Key", "apiKeySecretVersion": "$env_var", "requestLocation": "HEADER"}
                    },
                },
            }
        ),
        "tools/lookup_order/open_api_tool/open_api_schema.yaml": ORDERS_SCHEMA,
        # A YAML export with snake_case keys.
        "toolsets/catalog/catalog.yaml": (
            "display_name: catalog\n"
            "description: The catalogue.\n"
            "open_api_toolset:\n"
            "  open_api_schema: toolsets/catalog/open_api_toolset/open_api_schema.yaml\n"
        ),
        "toolsets/catalog/open_api_toolset/open_api_schema.yaml": ORDERS_SCHEMA.replace("Orders", "Catalog"),
        "agents/root/root.json": json.dumps({"displayName": "root", "tools": ["get_weather", "lookup_order"]}),
    }
    for rel, text in files.items():
        path = app / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return app


def zip_tree(src: Path, dest: Path) -> Path:
    with zipfile.ZipFile(dest, "w") as zf:
        for path in sorted(src.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(src.parent))
    return dest


@pytest.mark.parametrize("packed", [False, True], ids=["folder", "zip"])
def test_import_archive_gives_a_repo_that_applies(tmp_path: Path, packed: bool) -> None:
    app = make_export(tmp_path / "export")
    source = zip_tree(app, tmp_path / "export.zip") if packed else app
    out = tmp_path / "repo"
    r = cesync("import-archive", str(source), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "imported the app's settings, 1 tool, 2 toolsets and 1 agent (4 environment values as vars)" in r.stdout
    # the agent names its tool by folder, as CES exports do: a ref in the repo
    agent = (out / "agents" / "root.yaml").read_text()
    assert "tools:\n  - {ref: tools/get_weather}\n" in agent
    # an OpenAPI tool is made by a toolset (CES refuses it in CreateTool): it is written as one, and
    # the agent names the toolset
    assert "toolsets:\n  - toolset: {ref: toolsets/lookup_order}\n" in agent
    assert (
        "tool lookup_order (openApiTool): CES makes these only from a toolset; written as toolset lookup_order"
        in r.stderr + r.stdout
    )
    assert not (out / "tools" / "lookup_order.yaml").exists()
    assert "displayName: Support Bot" in (out / "app.yaml").read_text()

    config = (out / "cesync.yaml").read_text()
    assert "LOOKUP_ORDER_URL: https://orders.dev.example" in config
    assert "LOOKUP_ORDER_API_KEY_SECRET_VERSION: projects/dev/secrets/k/versions/1" in config
    assert "CATALOG_URL: https://catalog.dev.example" in config
    lookup = (out / "toolsets" / "lookup_order.yaml").read_text()
    assert "openApiToolset:" in lookup
    assert "url: ${LOOKUP_ORDER_URL}" in lookup and "apiKeySecretVersion: ${LOOKUP_ORDER_API_KEY_SECRET_VERSION}" in lookup
    assert (out / "schemas" / "lookup_order.toolset.yaml").read_text() == ORDERS_SCHEMA  # $env_var kept
    assert (out / "code" / "get_weather.py").read_text() == CODE
    assert "createTime" not in (out / "tools" / "get_weather.yaml").read_text()

    assert cesync("validate", "--dir", str(out)).returncode == 0
    applied = cesync("apply", "--dir", str(out), "--auto-approve")
    assert applied.returncode == 0 and "5 created" in applied.stdout, applied.stdout + applied.stderr
    state = Store(out / ".cesync" / "local.sqlite").snapshot()
    app_state = next(iter(state["apps"].values()))
    sent = app_state["toolsets"]["lookup_order"]["openApiToolset"]
    assert "https://orders.dev.example" in sent["openApiSchema"] and "$env_var" not in sent["openApiSchema"]
    assert app_state["toolsets"]["catalog"]["openApiToolset"]["url"] == "https://catalog.dev.example"
    again = cesync("plan", "--dir", str(out), "--detailed-exitcode")
    assert again.returncode == 0, again.stdout


def _zip_with(tmp_path: Path, members: dict[str, str]) -> Path:
    path = tmp_path / "bad.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in members.items():
            zf.writestr(name, text)
    return path


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda t: (t / "x.zip").write_bytes(b"PK\x03\x04 not really") and t / "x.zip", "not a readable zip"),
        (lambda t: _zip_with(t, {"../evil/app.json": "{}"}), "unsafe path"),
        (lambda t: _zip_with(t, {"notes.txt": "hello"}), "no CES app export"),
        (lambda t: _zip_with(t, {"tools/a/a.json": '{"pythonFunction": {'}), "tools/a/a.json:1:"),
    ],
    ids=["corrupt", "zip-slip", "not-an-export", "bad-json"],
)
def test_bad_archives_are_clear_errors_and_write_nothing(tmp_path: Path, make: object, expected: str) -> None:
    source = make(tmp_path)  # type: ignore[operator]
    out = tmp_path / "repo"
    r = cesync("import-archive", str(source), "--out", str(out))
    assert r.returncode == 1 and expected in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not out.exists() and not (tmp_path / "evil").exists()
