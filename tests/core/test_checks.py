"""core.checks.strangers: the names a newer description might have, found by one walk without a copy."""

from __future__ import annotations

import difflib
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cesync.api import descriptors
from cesync.api.kinds import KINDS
from cesync.core.checks import _typo, strangers
from cesync.core.walk import DROP, SpecWalker
from cesync.core.yamlfile import Path_
from cesync.models import FieldSpec, Kind, ProtoModel, specs


class _ByWalker(SpecWalker):
    """strangers as a SpecWalker (a copy of the data made and dropped): what the lean walk must find."""

    def __init__(self) -> None:
        self.found: list[str] = []
        self.models: list[type[ProtoModel]] = []

    def walk(self, data: Any, model: type[ProtoModel], path: Path_ = ()) -> Any:
        self.models.append(model)
        try:
            return super().walk(data, model, path)
        finally:
            self.models.pop()

    def unknown(self, key: str, value: Any, model: type[ProtoModel], path: Path_) -> Any:
        known = descriptors.fields_of(model.message_name) if model.message_name else {}
        if key not in known and key not in ("ref", "file") and not _typo(key, list(specs(model))):
            self.found.append(f"{descriptors.short_name(model.message_name) or model.__name__}.{key}")
        return DROP

    def not_a_message(self, data: Any, model: type[ProtoModel], path: Path_) -> Any:
        return None

    def value(self, spec: FieldSpec, value: Any, path: Path_, parent: dict[str, Any]) -> Any:
        items = value if isinstance(value, list) else [value]
        if spec.kind is Kind.ENUM and any(isinstance(item, str) and item not in spec.enum for item in items):
            model = self.models[-1]
            field = descriptors.fields_of(model.message_name).get(spec.name)
            known = {v.name for v in field.enum_type.values} if field is not None and field.enum_type else set(spec.enum)
            for item in items:
                typo = isinstance(item, str) and difflib.get_close_matches(item.upper(), list(known), n=1, cutoff=0.8)
                if isinstance(item, str) and item not in known and "${" not in item and not typo:
                    self.found.append(f"{descriptors.short_name(model.message_name)}.{spec.name}={item}")
        return value


STRANGE_KEYS = ["brandNewField", "descriptio", "display_name", "ref", "file", "zz"]
ODD_VALUES: list[Any] = ["text", 3, True, None, ["a", 1], {"k": "v"}]


def _message(draw: st.DrawFn, model: type[ProtoModel], depth: int) -> dict[str, Any]:
    """A message's data: its own fields (some of the wrong shape), unknown keys, enum values old and new."""
    table = specs(model)
    keys = draw(st.lists(st.sampled_from(sorted(table) + STRANGE_KEYS), max_size=5, unique=True))
    out: dict[str, Any] = {}
    for key in keys:
        spec = table.get(key)
        if spec is None:
            out[key] = draw(st.sampled_from(ODD_VALUES))
        elif spec.message is not None:
            sub = spec.message

            def one(sub: type[ProtoModel] = sub) -> Any:
                return _message(draw, sub, depth + 1) if depth < 4 and draw(st.booleans()) else draw(st.sampled_from(ODD_VALUES))

            shape = draw(st.sampled_from(["list", "map", "one"]))
            count = draw(st.integers(0, 2))
            out[key] = (
                [one() for _ in range(count)]
                if shape == "list"
                else {f"k{i}": one() for i in range(count)}
                if shape == "map"
                else one()
            )
        elif spec.kind is Kind.ENUM:
            words = st.sampled_from([*sorted(spec.enum), "NEW_VALUE_2099", "${VAR}", "lower", 7])
            out[key] = draw(st.one_of(words, st.lists(words, max_size=3)))
        else:
            out[key] = draw(st.sampled_from(ODD_VALUES))
    return out


@st.composite
def _files(draw: st.DrawFn) -> tuple[type[ProtoModel], Any]:
    model = draw(st.sampled_from([k.model for k in KINDS.values()]))
    return model, _message(draw, model, 0)


@settings(max_examples=400, deadline=None)
@given(case=_files())
def test_strangers_finds_what_the_spec_walker_finds(case: tuple[type[ProtoModel], Any]) -> None:
    model, data = case
    walker = _ByWalker()
    walker.walk(data, model)
    assert strangers(data, model) == walker.found


MAP_CASES = [
    ("tool", {"clientFunction": {"parameters": {"properties": {"a": {"type": "STRING", "newKeyword": 1}, "b": "x"}}}}),
    ("tool", {"clientFunction": {"parameters": {"defs": {"d": {"type": "NEW_TYPE_2099", "items": {"zz": 1}}}}}}),
    ("app", {"audioProcessingConfig": {"synthesizeSpeechConfigs": {"en-US": {"voice": "v", "brandNewField": 1}, "x": [1]}}}),
    ("tool", {"clientFunction": {"parameters": {"properties": [{"brandNewField": 1}]}}}),  # a list where a map goes
]


def test_strangers_enters_maps_of_messages() -> None:
    """Maps of messages are few and deep (a schema's properties): examples, since generating reaches them rarely."""
    for kind, data in MAP_CASES:
        walker = _ByWalker()
        walker.walk(data, KINDS[kind].model)
        assert strangers(data, KINDS[kind].model) == walker.found
    assert any(strangers(data, KINDS[kind].model) for kind, data in MAP_CASES[:3])
