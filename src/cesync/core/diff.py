"""(remote, desired) -> changes (pure, with deepdiff on canonical forms).

A change of a resource lists its changed field paths (for people) and the
minimal ``updateMask`` (for the API): camelCase paths that stop at the first
list, map, free-form value or document, never indexing into them.

What counts as a change is decided here and nowhere else: two canonical forms
differ when their JSON differs, with one exception, 1 and 1.0 (JSON has one
number type). ``true`` and ``1`` differ, list order and repetitions count, case
counts, every key counts (even ``__x``), floats compare exactly (normalize has
already rounded float32 fields). A difference that deepdiff reports without a
path the mask can name falls back to the top-level fields that differ, so a
change can never vanish between the diff and the update mask.

Two rules of the field-behaviour table (:mod:`cesync.api.behaviour`) decide what is
compared at all: INPUT_ONLY fields never are (normalize leaves them out), and a
SERVER_DEFAULTED field (or the APP_LOCK) the repo does not name is not a change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..api import behaviour as fb
from ..api.kinds import ResourceKind
from ..models import FieldSpec, Kind, ProtoModel, specs
from .normalize import DOCUMENT_FIELDS, Canonical, canonical
from .walk import specs_along

__all__ = [
    "DEEPDIFF_OPTIONS",
    "FieldChange",
    "ResourceDiff",
    "changed_paths",
    "deepdiff_paths",
    "diff_resource",
    "mask_path",
    "minimal_mask",
    "same",
]

# Every DeepDiff option that decides what a change is, spelled out: defaults move
# between releases (threshold_to_diff_deeper=0.33 reports a dict that changed by
# a third or more as one change of its parent, with an empty path at the top).
# Only options known to the lowest deepdiff in pyproject.toml are listed; the
# others (uuid, timezone handling) cannot apply to JSON data.
DEEPDIFF_OPTIONS: dict[str, Any] = {
    "threshold_to_diff_deeper": 0,  # always descend: one report per changed key
    "ignore_order": False,  # repeated fields keep their order on the wire
    "ignore_order_func": None,
    "report_repetition": False,
    "iterable_compare_func": None,
    "zip_ordered_iterables": True,  # element by element: difflib would take 0 for False
    "group_by": None,
    "ignore_private_variables": False,  # else dict keys starting with "__" are skipped
    "ignore_string_case": False,
    "ignore_string_type_changes": False,
    # 1 == 1.0, but True != 1: exact types (bool is an int subclass), one numeric group.
    # Not ignore_numeric_type_changes: it also rounds every number to 12 significant digits.
    "ignore_numeric_type_changes": False,
    "ignore_type_in_groups": [(int, float)],
    "ignore_type_subclasses": True,
    "ignore_nan_inequality": False,
    "ignore_encoding_errors": False,
    "significant_digits": None,  # exact comparison
    "math_epsilon": None,
    "use_log_scale": False,
    "number_to_string_func": None,
    "truncate_datetime": None,
    "use_enum_value": False,
    "exclude_paths": None,
    "exclude_regex_paths": None,
    "exclude_types": None,
    "exclude_obj_callback": None,
    "exclude_obj_callback_strict": None,
    "include_paths": None,
    "include_obj_callback": None,
    "include_obj_callback_strict": None,
    "custom_operators": None,
    "max_diffs": None,
    "verbose_level": 2,
    "view": "tree",
}


@dataclass(frozen=True)
class FieldChange:
    path: str
    before: Any = None
    after: Any = None


@dataclass(frozen=True)
class ResourceDiff:
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    fields: list[FieldChange] = field(default_factory=list)
    update_mask: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)


def mask_path(parts: list[str | int], model: type[ProtoModel]) -> list[str]:
    """Cut a deep path at the first list, map, struct or document field."""
    out: list[str] = []
    for spec in specs_along(model, parts):
        out.append(spec.name)
        if _mask_leaf(spec):
            break
    return out


def _mask_leaf(spec: FieldSpec) -> bool:
    """An update mask names this field whole (lists, maps, free-form values and documents are replaced, not merged)."""
    whole = spec.repeated or spec.map or spec.message is None
    return whole or spec.kind in (Kind.STRUCT, Kind.VALUE) or spec.name in DOCUMENT_FIELDS


def _get(data: Any, parts: list[str]) -> Any:
    for p in parts:
        if not isinstance(data, dict):
            return None
        data = data.get(p)
    return data


def same(a: Any, b: Any) -> bool:
    """Equal as JSON: Python's == would also take True for 1 (and 1 for 1.0, which JSON agrees with)."""
    if a is b:
        return True  # one parsed document on both sides (parse_document caches by content): no walk
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and bool(a == b)


def changed_paths(before: dict[str, Any], after: dict[str, Any], model: type[ProtoModel]) -> list[str]:
    """Mask paths of every difference (not minimal: see minimal_mask)."""
    if same(before, after):
        return []
    # The guard: deepdiff is the diff, but whatever it reports without a usable path,
    # or does not report at all, still reaches the mask, at the same granularity.
    return deepdiff_paths(before, after, model) + _differing(before, after, model)


def deepdiff_paths(before: dict[str, Any], after: dict[str, Any], model: type[ProtoModel]) -> list[str]:
    """The mask paths of deepdiff's reports; an empty or unmappable path is left to the guard."""
    from deepdiff import DeepDiff  # imported when something differs: an unchanged plan never needs it

    paths: list[str] = []
    for report in DeepDiff(before, after, **DEEPDIFF_OPTIONS).values():
        for level in report:
            cut = mask_path(level.path(output_format="list"), model)
            if cut:
                paths.append(".".join(cut))
    return paths


def _differing(before: dict[str, Any], after: dict[str, Any], model: type[ProtoModel], prefix: str = "") -> list[str]:
    table = specs(model)
    out: list[str] = []
    for key in {**before, **after}:
        b, a = before.get(key), after.get(key)
        if key in before and key in after and same(b, a):
            continue
        spec = table.get(key)
        if spec is not None and spec.message is not None and not _mask_leaf(spec) and isinstance(b, dict) and isinstance(a, dict):
            out += _differing(b, a, spec.message, f"{prefix}{key}.")
        else:
            out.append(prefix + key)
    return out


def minimal_mask(paths: list[str]) -> list[str]:
    kept: list[str] = []
    for p in sorted(set(paths), key=lambda x: (x.count("."), x)):
        if not any(p == k or p.startswith(k + ".") for k in kept):
            kept.append(p)
    return sorted(kept)


def _left_to_the_server(model_name: str) -> tuple[str, ...]:
    """Fields compared only when the repo names them: what the server fills in (SERVER_DEFAULTED),
    and the app lock (APP_LOCK), which operators set in the console; a repo that does not name
    ``locked`` neither lifts nor sets it (``locked: false`` does lift it)."""
    return (*fb.fields(model_name, fb.SERVER_DEFAULTED), *fb.fields(model_name, fb.APP_LOCK))


def diff_resource(kind: ResourceKind, rid: str, desired: dict[str, Any] | None, remote: dict[str, Any] | None) -> ResourceDiff:
    model = kind.model
    before = canonical(kind, rid, remote) if remote is not None else None
    after = canonical(kind, rid, desired) if desired is not None else None
    unknown = before.unknown if before else []
    if before is None or after is None:
        return ResourceDiff(before.body if before else None, after.body if after else None, unknown=unknown)
    unnamed = [f for f in _left_to_the_server(kind.model_name) if (desired or {}).get(f) is None and f in before.body]
    if unnamed:
        before = Canonical({k: v for k, v in before.body.items() if k not in unnamed}, before.unknown)
    mask = minimal_mask(changed_paths(before.body, after.body, model))
    fields = [FieldChange(p, _get(before.body, p.split(".")), _get(after.body, p.split("."))) for p in mask]
    return ResourceDiff(before.body, after.body, fields, mask, unknown)
