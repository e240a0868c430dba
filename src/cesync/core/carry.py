"""Remote fields cesync does not model, carried into the body of an update (pure).

An update sends the desired body with the plan's updateMask, and the server replaces
what the mask names. A field the API gained after this cesync's snapshot (unknown
here) survives wherever the mask does not reach; but where the mask names a field
whole (a list, a map, a message the repo sets whole), the server takes that field's
value from the body, which cannot hold what cesync does not know. So the remote's
unknown fields inside each masked field are carried into the body sent:

- in a message: at the same place;
- in a map value: into the value of the same key (an entry the repo removes goes,
  its fields with it);
- in a list item: into the item the repo keeps for it, the desired item equal to it
  in every known field (unchanged), else the item at the same place among the changed
  ones when the repo changed as many items as it had; an item the repo removes
  (no changed item is left for it) goes, its fields with it.

What cannot be placed (items added and removed in one list at once: which new item
is the old one?) is returned as ``lost``; the plan refuses such a change by name.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from ..api.kinds import ResourceKind
from ..models import FieldSpec, ProtoModel, specs
from .diff import same
from .normalize import canonical_message
from .walk import specs_along

__all__ = ["Carried", "carry_unknown"]


@dataclass(frozen=True)
class Carried:
    body: dict[str, Any]
    kept: list[str] = field(default_factory=list)  # where remote unknown fields were put into the body
    lost: list[str] = field(default_factory=list)  # remote unknown fields the update would drop


def carry_unknown(kind: ResourceKind, remote: dict[str, Any], body: dict[str, Any], mask: list[str] | tuple[str, ...]) -> Carried:
    """``body`` with the remote's unknown fields inside each masked field (a copy when there are any)."""
    model = kind.model
    out = copy.deepcopy(body)
    work = _Work()
    for path in mask:
        parts = path.split(".")
        chain = list(specs_along(model, parts))
        if len(chain) != len(parts):
            continue
        theirs: Any = remote
        ours: Any = out
        for part in parts[:-1]:
            theirs = theirs.get(part) if isinstance(theirs, dict) else None
            ours = ours.get(part) if isinstance(ours, dict) else None
        last = parts[-1]
        if not isinstance(theirs, dict) or not isinstance(ours, dict) or last not in theirs or last not in ours:
            continue  # the remote has nothing there, or the repo clears the field (its unknown fields with it)
        ours[last] = work.value(chain[-1], theirs[last], ours[last], path)
    return Carried(out if work.kept else body, work.kept, work.lost)


class _Work:
    def __init__(self) -> None:
        self.kept: list[str] = []
        self.lost: list[str] = []

    def value(self, spec: FieldSpec, theirs: Any, ours: Any, where: str) -> Any:
        if spec.message is None:
            return ours  # a scalar, Struct or Value: nothing in it is unknown
        if spec.repeated:
            return self.items(spec.message, theirs, ours, where) if isinstance(theirs, list) and isinstance(ours, list) else ours
        if spec.map:
            if not isinstance(theirs, dict) or not isinstance(ours, dict):
                return ours
            return {k: self.message(spec.message, theirs[k], v, f"{where}[{k}]") if k in theirs else v for k, v in ours.items()}
        return self.message(spec.message, theirs, ours, where)

    def message(self, model: type[ProtoModel], theirs: Any, ours: Any, where: str) -> Any:
        if not isinstance(theirs, dict) or not isinstance(ours, dict):
            return ours
        out = dict(ours)
        table = specs(model)
        for key, value in theirs.items():
            spec = table.get(key)
            if spec is None:
                if key not in out:
                    out[key] = value
                    self.kept.append(f"{where}.{key}")
            elif key in out:
                out[key] = self.value(spec, value, out[key], f"{where}.{key}")
        return out

    def items(self, model: type[ProtoModel], theirs: list[Any], ours: list[Any], where: str) -> list[Any]:
        mine = [canonical_message(x, model) for x in theirs]
        if not any(m.unknown for m in mine):
            return ours
        desired = [canonical_message(x, model).body for x in ours]
        pairs: dict[int, int] = {}
        free = list(range(len(ours)))
        for i, m in enumerate(mine):
            j = next((j for j in free if same(m.body, desired[j])), None)
            if j is not None:
                pairs[i] = j
                free.remove(j)
        left = [i for i in range(len(theirs)) if i not in pairs]
        if len(left) == len(free):
            pairs.update(zip(left, free, strict=True))
        elif free:  # items added and removed at once: no way to tell which new item an old one became
            self.lost += [f"{where}[{i}].{u}" for i in left for u in mine[i].unknown]
        out = list(ours)
        for i, j in sorted(pairs.items(), key=lambda p: p[1]):
            if mine[i].unknown:
                out[j] = self.message(model, theirs[i], ours[j], f"{where}[{j}]")
        return out
