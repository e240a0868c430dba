"""Every config field of Google's discovery documents against validate (issue 33, held against the
sources): googleapiclient 2.202.0's ces.v1.json and ces.v1beta.json, rev 20261016.

Walked from each kind's resource schema through $refs (each schema's fields once, by the first
path that reaches it), every property is written into a body with a value of the type the
document gives it. A field whose description begins "Output only." (or that the document marks
readOnly) must be refused at its key, so no file can have it sent; every other field must be
accepted: no problem at its key (unknown, dropped, output only or a bad value). What a field's
siblings then lack (a required neighbour) is not this test's business. The emulator, which
serves that revision, keeps every writable field it is sent.
"""

from __future__ import annotations

import importlib.resources
import json
from typing import Any

import pytest

from cesync.api.kinds import KINDS
from cesync.core.checks import lint_keys
from cesync.emulator import wire
from cesync.emulator.resources import APP, COLLECTIONS

MAX_DEPTH = 12


def _document(version: str) -> dict[str, Any]:
    path = importlib.resources.files("googleapiclient") / "discovery_cache" / "documents" / f"ces.{version}.json"
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


DOCUMENTS = {"v1": _document("v1"), "v1beta": _document("v1beta")}


def _leaf(prop: dict[str, Any]) -> Any:
    if "$ref" in prop:
        return {}
    if "enum" in prop:
        return prop["enum"][-1]
    kind, form = prop.get("type"), prop.get("format", "")
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        return 1
    if kind == "object":
        return {}
    strings = {"google-datetime": "2026-01-01T00:00:00Z", "google-duration": "1s", "byte": "eA==", "int64": "1", "uint64": "1"}
    return strings.get(form, "x")


def _cases() -> list[tuple[str, tuple[str | int, ...], bool]]:
    """(kind, path in the body, output only) of every field the kind's resource schema holds."""
    out: list[tuple[str, tuple[str | int, ...], bool]] = []
    for kind in KINDS.values():
        schemas = DOCUMENTS[kind.api_version]["schemas"]
        seen: set[str] = set()
        todo: list[tuple[str, tuple[str | int, ...]]] = [(kind.model_name, ())]
        while todo:
            schema_id, at = todo.pop(0)
            if schema_id in seen or schema_id not in schemas or len(at) > MAX_DEPTH:
                continue
            seen.add(schema_id)
            for name, prop in sorted(schemas[schema_id].get("properties", {}).items()):
                path: tuple[str | int, ...] = (*at, name)
                output_only = bool(prop.get("readOnly")) or str(prop.get("description", "")).startswith("Output only.")
                out.append((kind.name, path, output_only))
                inner = prop.get("items") if prop.get("type") == "array" else prop
                index: tuple[str | int, ...] = (0,) if prop.get("type") == "array" else ()
                if isinstance(inner, dict) and isinstance(inner.get("additionalProperties"), dict):
                    inner, index = inner["additionalProperties"], ("k",)
                if isinstance(inner, dict) and "$ref" in inner and not output_only:
                    todo.append((inner["$ref"], (*path, *index)))
    return out


CASES = _cases()


def _body(kind: str, path: tuple[str | int, ...]) -> dict[str, Any]:
    """A body with a value of the document's type at ``path`` (lists and maps where it says)."""
    schemas = DOCUMENTS[KINDS[kind].api_version]["schemas"]
    schema_id = KINDS[kind].model_name
    body: dict[str, Any] = {}
    holder: Any = body
    i = 0
    while i < len(path):
        name = str(path[i])
        prop = schemas[schema_id]["properties"][name]
        rest = path[i + 1 :]
        if i == len(path) - 1:
            value = _leaf(prop.get("items", prop)) if prop.get("type") == "array" else _leaf(prop)
            if prop.get("type") == "array":
                value = [value]
            elif isinstance(prop.get("additionalProperties"), dict):
                value = {"k": _leaf(prop["additionalProperties"])}
            holder[name] = value
            break
        child: dict[str, Any] = {}
        if prop.get("type") == "array":
            holder[name] = [child]
            ref = prop["items"]["$ref"]
            i += 2
        elif rest and rest[0] == "k":
            holder[name] = {"k": child}
            ref = prop["additionalProperties"]["$ref"]
            i += 2
        else:
            holder[name] = child
            ref = prop["$ref"]
            i += 1
        holder, schema_id = child, ref
    return body


def test_the_walk_covers_the_documents() -> None:
    assert len(CASES) > 800
    assert ("app", ("modelSettings", "thinkingLevel"), False) in CASES
    assert ("tool", ("readOnly",), True) in CASES
    assert ("guardrail", ("supervisor", "detectionMode"), False) in CASES


@pytest.mark.parametrize(("kind", "path", "output_only"), CASES, ids=[f"{k}.{'.'.join(map(str, p))}" for k, p, _ in CASES])
def test_a_writable_field_is_accepted_and_an_output_only_one_refused(
    kind: str, path: tuple[str | int, ...], output_only: bool
) -> None:
    body = _body(kind, path)
    _, findings = lint_keys(body, KINDS[kind].model, set_aside=[])
    here = [f.message for f in findings if tuple(f.path) == path]
    if output_only:
        assert any("output only" in m for m in here), (body, [(f.path, f.message) for f in findings])
    else:
        assert here == [], (body, here)


SERVED = {c.message: c.name for c in (*COLLECTIONS.values(), APP)}
# Not kept from a body, as the service does: the name comes from the URL, the etag from the server.
FROM_ELSEWHERE = {"name", "etag"}


@pytest.mark.parametrize(
    ("kind", "path"),
    [(k, p) for k, p, output_only in CASES if not output_only and p[-1] not in FROM_ELSEWHERE],
    ids=[f"{k}.{'.'.join(map(str, p))}" for k, p, o in CASES if not o and p[-1] not in FROM_ELSEWHERE],
)
def test_the_emulator_keeps_every_writable_field(kind: str, path: tuple[str | int, ...]) -> None:
    data: Any = wire.checked(SERVED[KINDS[kind].model_name], _body(kind, path), complete=False).data
    for part in path:
        assert isinstance(data, dict | list), (path, data)
        data = data[part]
