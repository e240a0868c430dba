"""A REQUIRED field holding its proto3 default ("", 0, the enum's 0, an empty list) is refused.

The API cannot tell such a value from an unset field and answers INVALID_ARGUMENT, so
validate reports it at file:line:col first. Cases come from the model: every REQUIRED
field reachable from every creatable tool and toolset type, inside lists and maps too.
"""

from __future__ import annotations

import asyncio
import copy
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import Phase, find, settings
from pydantic import ValidationError

from cesync.client import CesClient
from cesync.core.yamlfile import Document, load_text
from cesync.core.yamlout import to_yaml
from cesync.emulator import EmbeddedTransport
from cesync.models import Behavior, Kind, ProtoModel, specs
from cesync.models.base import FieldSpec
from cesync.repo.repo import load_repo
from tests.helpers import make_repo
from tests.strategies import CREATABLE, bodies, resource_types

ONCE = settings(database=None, max_examples=2000, phases=[Phase.generate])
PARENT = "projects/p/locations/us/apps/a"
Step = str | int


class Case(NamedTuple):
    path: tuple[Step, ...]
    spec: FieldSpec
    owner: type[ProtoModel]


@cache
def valid(model: type[ProtoModel], member: str | None = None) -> dict[str, Any]:
    """A valid body of ``model`` drawn from the model-derived strategies (the first one found)."""
    return find(bodies(model, depth=1, member=member), lambda b: True, settings=ONCE)


def _unset(spec: FieldSpec) -> Any:
    """The value of a REQUIRED field the API reads as unset."""
    if spec.repeated:
        return []
    if spec.map:
        return {}
    if spec.kind is Kind.ENUM:
        return next(name for name, number in spec.enum.items() if number == 0)
    return {Kind.STRING: "", Kind.BYTES: "", Kind.BOOL: False, Kind.INT32: 0, Kind.INT64: 0}.get(spec.kind, 0.0)


def required_paths(model: type[ProtoModel], member: str) -> list[Case]:
    """Each REQUIRED field of each message reachable from ``member``, by its shortest path.

    Breadth first, once per message and kind of container on the way (none, list, map,
    both), so a required field is also emptied inside a list item and a map value.
    """
    start = specs(model)[member]
    assert start.message is not None
    queue: list[tuple[tuple[Step, ...], type[ProtoModel], frozenset[str]]] = [((member,), start.message, frozenset())]
    seen: set[tuple[str, frozenset[str]]] = set()
    out: list[Case] = []
    while queue:
        path, message, via = queue.pop(0)
        if (message.__name__, via) in seen:
            continue
        seen.add((message.__name__, via))
        in_oneof = {m for members, _ in message.oneofs.values() for m in members}
        for name, spec in specs(message).items():
            if spec.behavior is Behavior.REQUIRED and name not in in_oneof and (spec.message is None or spec.repeated):
                out.append(Case((*path, name), spec, message))
            if spec.message is not None and spec.behavior not in (Behavior.OUTPUT_ONLY, Behavior.IDENTIFIER):
                if spec.repeated:
                    queue.append(((*path, name, 0), spec.message, via | {"list"}))
                elif spec.map:
                    queue.append(((*path, name, "k"), spec.message, via | {"map"}))
                else:
                    queue.append(((*path, name), spec.message, via))
    return out


def with_path(model: type[ProtoModel], member: str, path: tuple[Step, ...], value: Any) -> dict[str, Any]:
    """A valid body of the type that holds ``value`` at ``path`` (messages on the way drawn validly)."""
    body = copy.deepcopy(valid(model, member))
    node, message, i = body, model, 0
    while i < len(path) - 1:
        name = path[i]
        assert isinstance(name, str)
        spec = specs(message)[name]
        assert spec.message is not None
        _choose(node, message, name)
        fresh = copy.deepcopy(valid(spec.message))
        if spec.repeated:
            node[name] = node.get(name) or [fresh]
            node, i = node[name][0], i + 2
        elif spec.map:
            node[name] = {"k": fresh}
            node, i = node[name]["k"], i + 2
        else:
            node[name] = node.get(name) or fresh
            node, i = node[name], i + 1
        message = spec.message
    _choose(node, message, path[-1])
    node[path[-1]] = value
    return body


def _choose(node: dict[str, Any], message: type[ProtoModel], name: Step) -> None:
    """Setting a oneof member drops the sibling the drawn body had chosen."""
    for members, _ in message.oneofs.values():
        if name in members:
            for other in members:
                if other != name:
                    node.pop(other, None)


CASES = [(kind, member, case) for kind, member in resource_types() for case in required_paths(CREATABLE[kind], member)]
IDS = [f"{kind}-{'.'.join(str(p) for p in case.path)}" for kind, _, case in CASES]


def test_the_cases_reach_lists_maps_and_every_type() -> None:
    assert {(k, m) for k, m, _ in CASES} == set(resource_types())
    assert any(0 in case.path for _, _, case in CASES)  # inside a list item
    assert any("k" in case.path for _, _, case in CASES)  # inside a map value
    assert any(case.spec.repeated for _, _, case in CASES)  # a required list left empty
    assert {case.spec.kind for _, _, case in CASES} >= {Kind.STRING, Kind.ENUM, Kind.BYTES}


@pytest.fixture(scope="module")
def embedded() -> EmbeddedTransport:
    return EmbeddedTransport(auto_create_apps=True)  # one for the module: each case creates its own id


@pytest.mark.parametrize(("kind", "member", "case"), CASES, ids=IDS)
def test_model_refuses_and_emulator_agrees(kind: str, member: str, case: Case, embedded: EmbeddedTransport) -> None:
    model = CREATABLE[kind]
    field = case.path[-1]
    assert isinstance(field, str)
    model.model_validate(with_path(model, member, case.path, valid(case.owner)[field]))  # valid before emptying
    bad = with_path(model, member, case.path, _unset(case.spec))
    with pytest.raises(ValidationError) as caught:
        model.model_validate(bad)
    assert [(e["type"], e["loc"]) for e in caught.value.errors()] == [("required_empty", case.path)]

    async def create() -> str:
        async with CesClient("http://emu", transport=embedded) as c:
            written = await c.create(PARENT, f"{kind}s", f"case-{CASES.index((kind, member, case))}", bad)
        return str(written.error)

    refused = asyncio.run(create())
    where = kind + "".join(
        f"[{step}]" if isinstance(step, int) else f'["{step}"]' if step == "k" else f".{step}" for step in case.path
    )
    assert f"INVALID_ARGUMENT (400): invalid {kind}: {where}: Field is required." in refused, refused


def test_validate_reports_each_at_its_line_and_column(tmp_path: Path) -> None:
    """One repo with a file per case; validate names every emptied field where it is written."""
    files: dict[str, str] = {}
    expected: dict[str, tuple[tuple[Step, ...], str]] = {}
    for n, (kind, member, (path, spec, _)) in enumerate(CASES):
        rel = f"{kind}s/case-{n}.yaml"
        files[rel] = to_yaml(with_path(CREATABLE[kind], member, path, _unset(spec)))
        dotted = ".".join(str(p) for p in path)
        said = "empty" if spec.kind in (Kind.STRING, Kind.BYTES) or spec.repeated else str(_unset(spec))
        expected[rel] = (path, f"{dotted} is required and must not be {said}")
    root = make_repo(tmp_path, files)
    problems = load_repo(root).validate()
    by_file = {p.file: p for p in problems}
    for rel, (path, message) in expected.items():
        assert rel in by_file, (rel, files[rel], problems)
        doc = load_text(files[rel], rel)
        assert isinstance(doc, Document)
        line, col = doc.positions.at(path)
        assert str(by_file[rel]) == f"{rel}:{line}:{col}: {message}", files[rel]
    assert len(problems) == len(expected), [p for p in problems if p.file not in expected]


def test_validate_names_an_empty_client_function_name(tmp_path: Path) -> None:
    root = make_repo(tmp_path, {"tools/empty.yaml": "clientFunction:\n  name: ''\n  description: d\n"})
    assert [str(p) for p in load_repo(root).validate()] == [
        "tools/empty.yaml:2:9: clientFunction.name is required and must not be empty"
    ]
