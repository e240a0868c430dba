"""Hypothesis strategies for CES resource bodies, derived from the model itself.

Everything comes from the model's public introspection: :func:`cesync.models.specs`
(kind, repeated, map, message, enum, presence, behaviour of every field), the
``oneofs`` table of each message and each field's pydantic validators (resource-name
formats, bounds), so the strategies follow the model when it is regenerated.

``bodies(model)`` draws one valid request body (wire JSON) in any of its proto3 JSON
spellings: enums as names or numbers, int64 as numbers or strings, Durations with 0
to 9 fractional digits, float32 fields as doubles, proto3 defaults written out or left
out. ``pairs(model)`` draws (A, B): unrelated bodies, B a partial rewrite of A, or B
the same message as A spelled differently.
"""

from __future__ import annotations

import base64
import json
import math
from functools import cache
from typing import Annotated, Any

import annotated_types
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from cesync.api.kinds import KINDS
from cesync.api.protojson import is_default
from cesync.models import Behavior, FieldSpec, Kind, ProtoModel, Tool, specs
from cesync.models import evaluations as ev
from cesync.models.messages import AgentTool, DataMapping

__all__ = [
    "CREATABLE",
    "V1BETA_KINDS",
    "bodies",
    "json_values",
    "pairs",
    "pruned",
    "resource_bodies",
    "resource_types",
    "respell",
]

# Tool types the API refuses to create (toolsets make them, or CES does: see kinds.SERVER_MADE_TOOLS).
NOT_CREATABLE: dict[type[ProtoModel], tuple[str, ...]] = {Tool: tuple(KINDS["tool"].server_made)}
# Names of other resources of the app: they must name resources that exist (validate and the
# emulator check them, e13178d), which a body drawn alone cannot; tests/repo/test_repo.py and
# the official-client tests cover them.
NOT_CREATABLE[AgentTool] = ("agent", "rootAgent")
NOT_CREATABLE[DataMapping] = ("sourceToolName",)
# The evaluation kinds' references likewise (api/kinds.py: what a golden, a scenario, a dataset and a
# scheduled run name); a scheduled run's request.app is the app's own name, which the emulator does not check.
NOT_CREATABLE[ev.ToolCall] = ("tool", "toolsetTool")
NOT_CREATABLE[ev.ToolResponse] = ("tool", "toolsetTool")
NOT_CREATABLE[ev.AgentTransfer] = ("targetAgent",)
NOT_CREATABLE[ev.Golden] = ("evaluationExpectations",)
NOT_CREATABLE[ev.Scenario] = ("evaluationExpectations",)
NOT_CREATABLE[ev.EvaluationDataset] = ("evaluations",)
NOT_CREATABLE[ev.RunEvaluationRequest] = ("evaluations", "evaluationDataset", "appVersion", "scheduledEvaluationRun")
CREATABLE: dict[str, type[ProtoModel]] = {k.name: k.model for k in KINDS.values()}  # every kind is made by a create
# Kinds the property tests draw bodies of as they do tools' and toolsets' types: the v1beta ones.
V1BETA_KINDS = tuple(k.name for k in KINDS.values() if k.api_version == "v1beta")

# Candidate strings for fields with a format; each field keeps the ones its validators accept.
FORMATTED = [
    f"projects/p/locations/us/{suffix}{n}"
    for n in (1, 2)
    for suffix in (
        "connections/c",
        "collections/default_collection/dataStores/d",
        "dataStores/d",
        "collections/default_collection/engines/e",
        "agents/a",
        "apps/x/agents/a",
        "namespaces/n/services/s",
        "ragCorpora/r",
    )
] + [
    "projects/p/secrets/s/versions/1",
    "projects/p/secrets/s/versions/latest",
    "$context.variables.token",
    "$context.variables.other",
    "deployer@p.iam.gserviceaccount.com",
    "other@p.iam.gserviceaccount.com",
]
PLAIN = "plain"

CODE = [
    'def f(x):\n    """Echo."""\n    return x\n',
    "def g(a, b):\n    return {'sum': a + b}\n",
    'async def h():\n    """Wait."""\n    return None\n',
]
OPENAPI = {"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {"/x": {"get": {"operationId": "getX"}}}}
# Fields whose text has a meaning the server reads: drawn from texts that carry one.
MEANINGFUL_TEXT: dict[str, st.SearchStrategy[str]] = {
    "pythonCode": st.sampled_from(CODE),
    # The same document as JSON or YAML-ish JSON with other spacing, or another one.
    "openApiSchema": st.sampled_from(
        [
            json.dumps(OPENAPI),
            json.dumps(OPENAPI, indent=2),
            json.dumps({**OPENAPI, "info": {"title": "u", "version": "2"}}),
        ]
    ),
}

TEXT = st.text(alphabet="abcXY z-_é日", max_size=5)
KEYS = st.text(alphabet="abc_X", min_size=1, max_size=3)
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
FLOAT32_MAX = 3.4e38


def json_values(depth: int = 2) -> st.SearchStrategy[Any]:
    """Free JSON for Struct and Value fields: numbers a double holds exactly."""
    leaves = st.one_of(
        st.booleans(),
        st.integers(-(2**53), 2**53),
        st.floats(allow_nan=False, allow_infinity=False),
        TEXT,
    )
    if depth <= 0:
        return leaves
    inner = json_values(depth - 1)
    return st.one_of(leaves, st.lists(inner, max_size=2), st.dictionaries(KEYS, inner, max_size=2))


@cache
def _adapter(model: type[ProtoModel], name: str) -> TypeAdapter[Any]:
    info = model.model_fields[name]
    return TypeAdapter(Annotated[(info.annotation, *info.metadata)])


def _valid(model: type[ProtoModel], name: str, value: Any) -> bool:
    try:
        _adapter(model, name).validate_python(value)
    except ValidationError:
        return False
    return True


def _bounds(model: type[ProtoModel], name: str) -> tuple[float | None, float | None]:
    low = high = None
    for m in model.model_fields[name].metadata:
        if isinstance(m, (annotated_types.Ge, annotated_types.Gt)):
            low = float(m.ge if isinstance(m, annotated_types.Ge) else m.gt)
        if isinstance(m, (annotated_types.Le, annotated_types.Lt)):
            high = float(m.le if isinstance(m, annotated_types.Le) else m.lt)
    return low, high


@cache
def _texts(model: type[ProtoModel], name: str) -> st.SearchStrategy[str]:
    spec = specs(model)[name]
    if spec.name in MEANINGFUL_TEXT:
        return MEANINGFUL_TEXT[spec.name]
    sample = [PLAIN] if spec.repeated else PLAIN
    if spec.map:
        sample = {"k": PLAIN}  # type: ignore[assignment]
    if _valid(model, spec.name, sample):
        return TEXT
    formatted = [s for s in FORMATTED if _valid(model, spec.name, [s] if spec.repeated else s)]
    if not formatted:
        raise ValueError(f"tests/strategies.py: no candidate string fits {model.__name__}.{spec.name}; add one to FORMATTED")
    return st.sampled_from(formatted)


def _duration() -> st.SearchStrategy[str]:
    @st.composite
    def spell(draw: st.DrawFn) -> str:
        seconds = draw(st.integers(0, 10**6))
        nanos = (
            draw(st.sampled_from([0, 500_000_000, 1_000_000, 1_000, 1]))
            if draw(st.booleans())
            else draw(st.integers(0, 10**9 - 1))
        )
        digits = draw(st.integers(0, 9))
        if nanos % 10 ** (9 - digits):
            digits = 9
        frac = f"{nanos:09d}"[:digits]
        return f"{seconds}.{frac}s" if frac else f"{seconds}s"

    return spell()


def _scalar(model: type[ProtoModel], spec: FieldSpec) -> st.SearchStrategy[Any]:
    kind = spec.kind
    low, high = _bounds(model, spec.name)
    if kind is Kind.STRING:
        return _texts(model, spec.name)
    if kind is Kind.BOOL:
        return st.booleans()
    if kind in (Kind.INT32, Kind.INT64):
        lo, hi = INT32 if kind is Kind.INT32 else INT64
        ints = st.integers(int(low) if low is not None else lo, int(high) if high is not None else hi)
        return st.one_of(ints, ints.map(str)) if kind is Kind.INT64 else ints  # int64 travels as a string, or a number
    if kind in (Kind.DOUBLE, Kind.FLOAT):
        limit = FLOAT32_MAX / 2 if kind is Kind.FLOAT else None
        return st.floats(
            min_value=low if low is not None else (-limit if limit else None),
            max_value=high if high is not None else limit,
            allow_nan=False,
            allow_infinity=False,
        )
    if kind is Kind.BYTES:
        return st.binary(max_size=6).map(lambda b: base64.b64encode(b).decode())
    if kind is Kind.DURATION:
        return _duration()
    if kind is Kind.TIMESTAMP:
        return st.sampled_from(["2024-01-02T03:04:05Z", "2025-06-07T08:09:10.500Z"])
    if kind is Kind.ENUM:
        return st.sampled_from([*spec.enum, *spec.enum.values()])  # names or numbers
    if kind is Kind.STRUCT:
        return st.dictionaries(KEYS, json_values(1), max_size=2)
    if kind is Kind.VALUE:
        return json_values(1)
    raise AssertionError(f"no strategy for {kind}")


def _field(model: type[ProtoModel], spec: FieldSpec, depth: int) -> st.SearchStrategy[Any]:
    one: st.SearchStrategy[Any] = bodies(spec.message, depth - 1) if spec.message is not None else _scalar(model, spec)
    most = 2 if depth >= 2 else 1  # keeps nested lists of messages (boost specs) small
    required = spec.behavior is Behavior.REQUIRED  # the server refuses a default (empty) value
    if spec.repeated:
        return st.lists(one, min_size=1 if required else 0, max_size=min(most, spec.max_items or most))
    if spec.map and spec.kind is not Kind.STRUCT:
        return st.dictionaries(KEYS, one, min_size=1 if required else 0, max_size=most)
    if required and spec.message is None:
        return one.filter(lambda v: not is_default(v, spec.kind, spec.enum))
    return one


def _writable(model: type[ProtoModel]) -> dict[str, FieldSpec]:
    skip = set(NOT_CREATABLE.get(model, ()))
    return {
        n: s
        for n, s in specs(model).items()
        if s.behavior not in (Behavior.OUTPUT_ONLY, Behavior.IDENTIFIER) and n not in skip and n != "etag"
    }


@st.composite
def _body(draw: st.DrawFn, model: type[ProtoModel], depth: int, member: str | None) -> dict[str, Any]:
    table = _writable(model)
    in_oneof = {m for members, _ in model.oneofs.values() for m in members}
    chosen: list[str] = []
    for members, required in model.oneofs.values():
        usable = [m for m in members if m in table]
        if member in usable:
            chosen.append(member)
        elif usable and (required or draw(st.booleans())):
            chosen.append(draw(st.sampled_from(usable)))
    required = [n for n, s in table.items() if s.behavior is Behavior.REQUIRED and n not in in_oneof]
    optional = [n for n, s in table.items() if s.behavior is not Behavior.REQUIRED and n not in in_oneof]
    if depth <= 0:
        optional = [n for n in optional if table[n].message is None]  # recursion (Schema) stops here
    extra = draw(st.lists(st.sampled_from(optional), max_size=3, unique=True)) if optional else []
    body: dict[str, Any] = {}
    for name in [*chosen, *required, *extra]:
        body[name] = draw(_field(model, table[name], depth))
    return body


def bodies(model: type[ProtoModel], depth: int = 3, member: str | None = None) -> st.SearchStrategy[dict[str, Any]]:
    """One valid request body of ``model`` (a message at most ``depth`` levels deep), with oneof ``member`` if given."""
    return _body(model, depth, member).filter(lambda b: _model_accepts(model, b))


def _model_accepts(model: type[ProtoModel], body: dict[str, Any]) -> bool:
    try:
        model.model_validate(body)
    except ValidationError:
        return False
    return True


def respell(draw: st.DrawFn, value: Any, model: type[ProtoModel]) -> Any:
    """The same message in another proto3 JSON spelling (enum numbers, int64 strings, Duration digits)."""
    out: dict[str, Any] = {}
    table = specs(model)
    for key, item in value.items():
        spec = table[key]
        if spec.message is not None:
            if spec.repeated:
                out[key] = [respell(draw, v, spec.message) for v in item]
            elif spec.map:
                out[key] = {k: respell(draw, v, spec.message) for k, v in item.items()}
            else:
                out[key] = respell(draw, item, spec.message)
        elif spec.repeated:
            out[key] = [_respell_scalar(draw, v, spec) for v in item]
        elif spec.map:
            out[key] = item
        else:
            out[key] = _respell_scalar(draw, item, spec)
    return out


def _respell_scalar(draw: st.DrawFn, value: Any, spec: FieldSpec) -> Any:
    if not draw(st.booleans()):
        return value
    if spec.kind is Kind.ENUM:
        by_number = {n: name for name, n in spec.enum.items()}
        return spec.enum.get(value, value) if isinstance(value, str) else by_number.get(value, value)
    if spec.kind is Kind.INT64:
        return str(value) if isinstance(value, int) else int(value)
    if spec.kind is Kind.DURATION and value.endswith("s"):
        whole, _, frac = value[:-1].partition(".")
        return f"{whole}.{(frac + '000000000')[:9]}s"
    if spec.kind.name in (Kind.DOUBLE, Kind.FLOAT) and isinstance(value, float) and value.is_integer() and math.isfinite(value):
        return int(value) if abs(value) < 2**53 else value
    return value


@st.composite
def pairs(
    draw: st.DrawFn, model: type[ProtoModel], depth: int = 3, member: str | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(A, B): unrelated (any type), B a partial rewrite of A (some top-level fields), or A respelled."""
    a = draw(bodies(model, depth, member))
    how = draw(st.sampled_from(["unrelated", "rewrite", "respell"]))
    if how == "respell":
        return a, respell(draw, a, model)
    other = draw(bodies(model, depth))
    if how == "unrelated":
        return a, other
    keys = draw(st.lists(st.sampled_from(sorted({*a, *other})), unique=True))
    b = {k: v for k, v in a.items() if k not in keys} | {k: other[k] for k in keys if k in other}
    return (a, b) if _model_accepts(model, b) else (a, other)


def pruned(value: Any, drop: list[bool]) -> Any:
    """value with some keys of its mappings left out (drop: one choice per key, reused in turn)."""
    if isinstance(value, dict):
        kept = {k: v for i, (k, v) in enumerate(value.items()) if not (drop and drop[i % len(drop)])}
        return {k: pruned(v, drop[1:] + drop[:1]) for k, v in kept.items()}
    if isinstance(value, list):
        return [pruned(v, drop) for v in value]
    return value


def resource_types() -> list[tuple[str, str]]:
    """(kind, oneof member) of every creatable tool and toolset type."""
    out: list[tuple[str, str]] = []
    for kind, model in sorted(CREATABLE.items()):
        table = _writable(model)
        out += [(kind, m) for members, required in model.oneofs.values() if required for m in members if m in table]
    return out


def resource_bodies(
    depth: int = 3, kinds: tuple[str, ...] = ()
) -> st.SearchStrategy[tuple[str, tuple[dict[str, Any], dict[str, Any]]]]:
    """(kind, (A, B)) with A of a type drawn evenly from every creatable tool and toolset type, and from
    each of ``kinds`` (V1BETA_KINDS: the evaluation kinds, which have no type oneof)."""
    cases = [*resource_types(), *((k, "") for k in kinds)]
    return st.sampled_from(cases).flatmap(
        lambda t: pairs(CREATABLE[t[0]], depth, t[1] or None).map(lambda p, kind=t[0]: (kind, p))
    )
