"""The emulator reads documents a client wrote (a toolset's OpenAPI schema, an imported archive,
a request's JSON) under limits of its own: an alias bomb or a document nested 30,000 deep is
refused at once with a message saying which limit, never an internal error or a hang."""

from __future__ import annotations

import base64
import io
import time
import zipfile
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cesync.emulator.bounded import MAX_DEPTH, MAX_NODES, TooLarge, load_json, load_yaml

APP = "projects/p/locations/us/apps/a"
OPERATION = "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths:\n  /x:\n    get:\n      operationId: x\n"


def bomb(levels: int = 10, width: int = 10) -> str:
    """Ten levels of ten aliases each: 10^10 nodes once expanded, a few hundred bytes written."""
    lines = ["x-bomb:", "  a0: &a0 {type: object, properties: {p: {type: string}}}"]
    for i in range(1, levels):
        props = ", ".join(f"p{j}: *a{i - 1}" for j in range(width))
        lines.append(f"  a{i}: &a{i} {{type: object, properties: {{{props}}}}}")
    return OPERATION + "\n".join(lines) + "\n"


DEEP_YAML = OPERATION + "x-deep: " + "[" * 30_000 + "]" * 30_000 + "\n"
DEEP_JSON = '{"openapi": "3.0.0", "paths": {"/x": {"get": {"operationId": "x"}}}, "x": ' + "[" * 30_000 + "]" * 30_000 + "}"
DEEP_BLOCK = OPERATION + "".join(f"{' ' * i}k{i}:\n" for i in range(1_000)) + " " * 1_000 + "v\n"
HOSTILE = {"alias bomb": bomb(), "deep YAML": DEEP_YAML, "deep JSON": DEEP_JSON, "deep block YAML": DEEP_BLOCK}


@pytest.mark.parametrize("what", sorted(HOSTILE))
def test_a_hostile_document_is_refused_quickly_saying_why(what: str) -> None:
    started = time.monotonic()
    with pytest.raises(TooLarge) as refused:
        (load_json if what == "deep JSON" else load_yaml)(HOSTILE[what])
    assert time.monotonic() - started < 5
    said = str(refused.value)
    assert ("nested deeper than" in said) if "deep" in what else ("more than" in said and "alias" in said)


@settings(max_examples=40, deadline=None)
@given(depth=st.integers(1, MAX_DEPTH + 20), as_json=st.booleans())
@example(depth=MAX_DEPTH, as_json=False)
@example(depth=MAX_DEPTH + 1, as_json=False)
@example(depth=MAX_DEPTH, as_json=True)
@example(depth=MAX_DEPTH + 1, as_json=True)
def test_the_depth_limit_is_exact(depth: int, as_json: bool) -> None:
    """depth: lists nested in one another, as the limit counts them (DEEP_SAID)."""
    text = "[" * depth + "1" + "]" * depth
    if depth <= MAX_DEPTH:
        assert (load_json if as_json else load_yaml)(text) is not None
    else:
        with pytest.raises(TooLarge):
            (load_json if as_json else load_yaml)(text)


def test_an_alias_counts_as_what_it_names_and_a_small_document_loads() -> None:
    width = int(MAX_NODES**0.5) + 1
    inner = "[" + ", ".join(["x"] * width) + "]"
    with pytest.raises(TooLarge):
        load_yaml(f"a: &a {inner}\nb: [" + ", ".join(["*a"] * width) + "]\n")
    assert load_yaml(f"a: &a {inner}\nb: [*a, *a]\n")["b"][1][0] == "x"
    assert load_json('{"a": "[not {a bracket", "b": [1, {"c": "]]]"}]}') == {"a": "[not {a bracket", "b": [1, {"c": "]]]"}]}


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    from cesync.emulator.server import BackgroundServer

    with BackgroundServer(apps=[APP]) as server:
        yield f"{server.url}/v1/{APP}"


@pytest.mark.parametrize("what", sorted(HOSTILE))
def test_a_toolset_s_hostile_schema_is_a_clear_error_over_http(served: str, what: str) -> None:
    rid = what.replace(" ", "-").lower()
    made = httpx.post(f"{served}/toolsets", params={"toolsetId": rid}, json={"openApiToolset": {"openApiSchema": HOSTILE[what]}})
    assert made.status_code == 200, made.text  # CES stores the text; what reads it refuses it
    started = time.monotonic()
    listed = httpx.post(f"{served}/toolsets/{rid}:retrieveTools", json={}, timeout=30)
    assert listed.status_code == 200 and listed.json().get("tools", []) == [], listed.text  # no operations read
    tool = {"toolsetTool": {"toolset": f"{APP}/toolsets/{rid}", "toolId": "x"}}
    for method in (":retrieveToolSchema", ":executeTool"):
        answer = httpx.post(f"{served}{method}", json=tool, timeout=30)
        assert answer.status_code == 400 and answer.json()["error"]["status"] == "FAILED_PRECONDITION", answer.text
        said = answer.json()["error"]["message"]
        assert ("nested deeper than" in said) if "deep" in what else ("alias" in said), said
    assert time.monotonic() - started < 10


def _archive(files: dict[str, str]) -> str:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return base64.b64encode(out.getvalue()).decode()


@pytest.mark.parametrize("what", ["alias bomb", "deep YAML", "deep block YAML"])
def test_an_imported_archive_s_hostile_document_is_refused(served: str, what: str) -> None:
    location = APP.rsplit("/apps/", 1)[0]
    started = time.monotonic()
    answer = httpx.post(
        f"{served.rsplit('/apps/', 1)[0]}/apps:importApp",
        json={"appId": "imported", "appContent": _archive({"app/app.yaml": HOSTILE[what]})},
        timeout=30,
    )
    assert answer.status_code == 400, answer.text
    said = answer.json()["error"]["message"]
    assert "app.yaml" in said and ("nested deeper than" in said or "alias" in said), said
    assert time.monotonic() - started < 10
    assert location


def test_a_request_body_nested_30000_deep_is_invalid_argument(served: str) -> None:
    body = '{"displayName": "d", "clientFunction": {"name": "d", "parameters": ' + "[" * 30_000 + "]" * 30_000 + "}}"
    answer = httpx.post(f"{served}/tools", params={"toolId": "deep"}, content=body, headers={"content-type": "application/json"})
    assert answer.status_code == 400, answer.text
    assert "nested deeper than" in answer.json()["error"]["message"]


def test_a_python_tool_too_complex_to_parse_is_a_clear_error(served: str) -> None:
    """Python's parser gives up on 100,000 unary minus signs with MemoryError, not SyntaxError:
    creating the tool was an internal error (500), as its schema would be."""
    code = "def f(x: int) -> int:\n    return " + "-" * 100_000 + "1\n"
    made = httpx.post(f"{served}/tools", params={"toolId": "complex"}, json={"pythonFunction": {"pythonCode": code}})
    assert made.status_code < 500, made.text
    if made.status_code == 200:
        schema = httpx.post(f"{served}:retrieveToolSchema", json={"tool": f"{APP}/tools/complex"})
        assert schema.status_code == 400 and "too complex" in schema.json()["error"]["message"], schema.text
