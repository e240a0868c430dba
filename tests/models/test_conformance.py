"""Our model against the published API: every field, every enum value, same JSON names."""

from __future__ import annotations

from typing import Any

import pytest

from cesync.models import Kind, ProtoModel, Tool, Toolset, specs

ces_v1 = pytest.importorskip("google.cloud.ces_v1")

# Fields that only the API reference pages (the seeds) name, not the package.
SEED_ONLY = {("AgentTool", "agent")}


def _pairs(ours: type[ProtoModel], theirs: Any, seen: set[str]) -> list[tuple[type[ProtoModel], Any]]:
    if theirs.full_name in seen:
        return []
    seen.add(theirs.full_name)
    out = [(ours, theirs)]
    table = specs(ours)
    for f in theirs.fields:
        if f.message_type is None or f.message_type.full_name.startswith("google.protobuf"):
            continue
        spec = table.get(f.json_name)
        if spec is None or spec.message is None:
            continue  # reported by the field test below
        target = f.message_type
        if target.GetOptions().map_entry:
            target = target.fields_by_name["value"].message_type
            if target is None:
                continue
        out += _pairs(spec.message, target, seen)
    return out


def _all_pairs() -> list[tuple[type[ProtoModel], Any]]:
    seen: set[str] = set()
    return _pairs(Tool, ces_v1.Tool.pb().DESCRIPTOR, seen) + _pairs(Toolset, ces_v1.Toolset.pb().DESCRIPTOR, seen)


PAIRS = _all_pairs()


def _reachable(desc: Any, acc: set[str]) -> set[str]:
    if desc.full_name in acc or desc.full_name.startswith("google.protobuf"):
        return acc
    if not desc.GetOptions().map_entry:
        acc.add(desc.full_name)
    for f in desc.fields:
        if f.message_type is not None:
            _reachable(f.message_type, acc)
    return acc


def test_walk_reaches_every_message() -> None:
    expected = _reachable(ces_v1.Toolset.pb().DESCRIPTOR, _reachable(ces_v1.Tool.pb().DESCRIPTOR, set()))
    assert {theirs.full_name for _, theirs in PAIRS} == expected


@pytest.mark.parametrize(("ours", "theirs"), PAIRS, ids=[t.full_name for _, t in PAIRS])
def test_every_field_and_enum_value(ours: type[ProtoModel], theirs: Any) -> None:
    table = specs(ours)
    theirs_names = {f.json_name for f in theirs.fields}
    extra = set(table) - theirs_names - {n for cls, n in SEED_ONLY if cls == ours.__name__}
    assert not extra, f"{ours.__name__} has fields the API lacks: {extra}"
    for f in theirs.fields:
        assert f.json_name in table, f"{ours.__name__} lacks {f.json_name}"
        spec = table[f.json_name]
        assert spec.repeated == (f.is_repeated and not _is_map(f)), f.json_name
        assert spec.map == _is_map(f), f.json_name
        if f.enum_type is not None:
            assert spec.kind is Kind.ENUM, f.json_name
            assert spec.enum == {v.name: v.number for v in f.enum_type.values}, f.json_name
        if f.containing_oneof is not None and not f.containing_oneof.name.startswith("_"):
            assert spec.oneof == f.containing_oneof.name, f.json_name


def _is_map(f: Any) -> bool:
    return bool(f.message_type is not None and f.message_type.GetOptions().map_entry)


def test_seed_only_fields_are_modelled() -> None:
    from cesync.models.messages import AgentTool

    for cls, name in SEED_ONLY:
        assert cls == "AgentTool" and name in specs(AgentTool)
