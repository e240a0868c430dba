"""One walk over a JSON value along a message's field specs (pure).

Every pass that follows the API's shape (normalize, lint, snake_case to JSON names,
key ordering) is a :class:`SpecWalker` subclass: the walker decides once how a
message, a repeated field and a map are entered; a subclass says only what happens
at a field (hooks). The field specs come from the generated models
(:func:`cesync.models.specs`), so a new field or message needs no walker change.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

from ..models import Behavior, FieldSpec, ProtoModel, specs

__all__ = ["DROP", "NAMING_FIELDS", "Path", "SpecWalker", "specs_along", "written_order"]

Path = tuple[str | int, ...]


class _Drop:
    def __repr__(self) -> str:
        return "DROP"


DROP: Final = _Drop()  # a hook's answer: leave this field out of the result


class SpecWalker:
    """Walk ``data`` as a ``model`` message; the result is a new value, ``data`` is not changed.

    Entering: a message field's value is walked as that message; a repeated one item by
    item, a map entry by entry (unless ``maps`` is False: then a map is a plain value).
    A value of the wrong shape is walked as it is (``not_a_message`` decides).
    """

    maps: bool = True  # enter map fields whose values are messages
    # Whether a subclass overrides order / field_name: normalize runs on every resource of
    # every plan, and skipping two no-op calls per field keeps the walk as fast as a loop.
    _reorders: bool = False
    _renames: bool = False

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        cls._reorders = cls.order is not SpecWalker.order
        cls._renames = cls.field_name is not SpecWalker.field_name

    def walk(self, data: Any, model: type[ProtoModel], path: Path = ()) -> Any:
        if not isinstance(data, dict):
            return self.not_a_message(data, model, path)
        table = specs(model)
        out: dict[str, Any] = {}
        for key in self.order(data, table) if self._reorders else data:
            value = data[key]
            name = self.field_name(key, table) if self._renames else key
            spec = table.get(name)
            here = (*path, key)
            if spec is None:
                value = self.unknown(key, value, model, here)
                name = key
            elif self.skip(spec, value, here):
                continue
            elif spec.message is not None and (self.maps or not spec.map):
                value = self.message(spec, value, here)
            else:
                value = self.value(spec, value, here, data)
            if value is not DROP:
                out[name] = value
        return out

    def message(self, spec: FieldSpec, value: Any, path: Path) -> Any:
        """A message-typed field: one message, a list of them or a map of them."""
        assert spec.message is not None
        if spec.repeated and isinstance(value, list):
            return [self.walk(v, spec.message, self.item_path(path, i)) for i, v in enumerate(value)]
        if spec.map and isinstance(value, dict):
            return {k: self.walk(v, spec.message, (*path, k)) for k, v in value.items()}
        return self.walk(value, spec.message, path)

    # --- hooks ---------------------------------------------------------------------------

    def order(self, data: dict[str, Any], table: dict[str, FieldSpec]) -> Iterable[str]:
        """The order the keys are visited and written in (default: as given)."""
        return data

    def field_name(self, key: str, table: dict[str, FieldSpec]) -> str:
        """The JSON name a key stands for (default: itself)."""
        return key

    def unknown(self, key: str, value: Any, model: type[ProtoModel], path: Path) -> Any:
        """A key the message does not have: kept as it is by default."""
        return value

    def skip(self, spec: FieldSpec, value: Any, path: Path) -> bool:
        """Whether to leave a known field out before looking at its value."""
        return False

    def value(self, spec: FieldSpec, value: Any, path: Path, parent: dict[str, Any]) -> Any:
        """A field that is not entered: scalars, lists and maps of them, Struct, Value."""
        return value

    def not_a_message(self, data: Any, model: type[ProtoModel], path: Path) -> Any:
        """Where a message was expected and something else is found: kept by default."""
        return data

    def item_path(self, path: Path, index: int) -> Path:
        return (*path, index)


def specs_along(model: type[ProtoModel] | None, path: Sequence[Any]) -> Iterator[FieldSpec]:
    """The spec of each field on ``path`` from ``model``, as far as the path follows known fields
    (it stops at a list index, a map key, a scalar or a key the message does not have)."""
    current = model
    for part in path:
        spec = specs(current).get(part) if current is not None and isinstance(part, str) else None
        if spec is None:
            return
        yield spec
        current = spec.message


# What names a resource, read first in its file: the file's own id, then the API's name fields.
NAMING_FIELDS = ("id", "name", "displayName", "description")


def written_order(table: Mapping[str, FieldSpec]) -> dict[str, int]:
    """The rank of each field where a file writes it (fmt's layout, export's files, pull's new keys).

    The fields as the API declares them, except that a resource (a message whose ``name`` is its
    IDENTIFIER) starts with what names it (NAMING_FIELDS): the protos declare a resource's type
    oneof (``llmAgent``, ``contentFilter``, ``clientFunction``) above its name, which in a file
    would put ``llmAgent: {}`` before ``displayName``. A nested message keeps the API's order
    (a Schema's ``type`` before its ``description``)."""
    name = table.get("name")
    lead = NAMING_FIELDS if name is not None and name.behavior is Behavior.IDENTIFIER else ("id",)
    ordered = [*lead, *(n for n in table if n not in lead)]
    return {n: i for i, n in enumerate(ordered)}
