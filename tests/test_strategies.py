"""The model-derived strategies reach every message and every tool and toolset type."""

from __future__ import annotations

import pytest
from hypothesis import Phase, find, settings

from cesync.models import TOOL_TYPES, TOOLSET_TYPES, ProtoModel, Tool, Toolset, specs
from tests.strategies import CREATABLE, NOT_CREATABLE, bodies, pairs, resource_types

ONCE = settings(database=None, max_examples=2000, phases=[Phase.generate])  # the first hit, unshrunk


def reachable(model: type[ProtoModel], seen: dict[str, type[ProtoModel]]) -> dict[str, type[ProtoModel]]:
    if model.__name__ not in seen:
        seen[model.__name__] = model
        for spec in specs(model).values():
            if spec.message is not None:
                reachable(spec.message, seen)
    return seen


MESSAGES = reachable(Tool, reachable(Toolset, {}))


@pytest.mark.parametrize("model", list(MESSAGES.values()), ids=list(MESSAGES))
def test_every_message_has_valid_bodies(model: type[ProtoModel]) -> None:
    body = find(bodies(model, depth=1), lambda b: True, settings=ONCE)
    model.model_validate(body)


def test_every_creatable_type_is_drawn() -> None:
    expected = [("tool", t) for t in TOOL_TYPES if t not in NOT_CREATABLE[Tool]] + [("toolset", t) for t in TOOLSET_TYPES]
    assert sorted(resource_types()) == sorted(expected)


@pytest.mark.parametrize(("kind", "member"), resource_types(), ids=[t for _, t in resource_types()])
def test_a_is_of_the_drawn_type(kind: str, member: str) -> None:
    model = CREATABLE[kind]
    a, _ = find(pairs(model, 2, member), lambda p: True, settings=ONCE)
    assert member in a
