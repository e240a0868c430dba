"""The machinery every CES message model is built from.

A model is a pydantic class whose attribute names are the REST (camelCase) JSON
names. Each field carries a :class:`Meta` marker saying how the API treats it
(required, optional, output only, identifier) and what proto kind it has, so that
the pure code paths (normalization, the emulator, validation) can walk any
message generically through :func:`specs`.
"""

from __future__ import annotations

import base64
import binascii
import enum
import re
import sys
import types
from dataclasses import dataclass, field
from functools import cache
from typing import Annotated, Any, ClassVar, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError, core_schema

__all__ = [
    "AnyMessage",
    "Behavior",
    "Bytes",
    "Duration",
    "FieldMask",
    "FieldSpec",
    "Float32",
    "Int64",
    "Kind",
    "Meta",
    "ProtoEnum",
    "ProtoModel",
    "Struct",
    "Timestamp",
    "Value",
    "build",
    "field_",
    "resource",
    "specs",
]


class Behavior(str, enum.Enum):
    REQUIRED = "required"
    OPTIONAL = "optional"
    OUTPUT_ONLY = "output_only"
    IDENTIFIER = "identifier"


class Kind(str, enum.Enum):
    STRING = "string"
    BOOL = "bool"
    INT32 = "int32"
    INT64 = "int64"
    DOUBLE = "double"
    FLOAT = "float"  # 32 bits: compared after float32 rounding
    BYTES = "bytes"
    DURATION = "duration"
    TIMESTAMP = "timestamp"
    ENUM = "enum"
    MESSAGE = "message"
    STRUCT = "struct"  # google.protobuf.Struct: a free JSON object
    VALUE = "value"  # google.protobuf.Value: any JSON


@dataclass(frozen=True)
class Meta:
    """Per-field facts from the API reference that a type hint cannot carry."""

    behavior: Behavior = Behavior.OPTIONAL
    presence: bool = False  # proto3 `optional` scalar: 0 is a value, not absence
    max_items: int | None = None
    doc: str = ""


@dataclass(frozen=True)
class _KindMarker:
    kind: Kind


class ProtoEnum:
    """Marks a ``Literal[...]`` of enum value names as a proto enum.

    Numbers follow the order of the names unless given (some enums skip numbers).
    Requests may carry a number or a name; the model always holds the name.
    """

    def __init__(self, numbers: dict[str, int] | None = None) -> None:
        self.numbers = numbers

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        names = get_args(source)
        by_number = {number: name for name, number in self.table(names).items()}

        def to_name(value: Any) -> Any:
            if isinstance(value, int) and not isinstance(value, bool):
                return by_number.get(value, value)
            return value

        return core_schema.no_info_before_validator_function(to_name, handler(source))

    def table(self, names: tuple[str, ...]) -> dict[str, int]:
        return dict(self.numbers) if self.numbers else {n: i for i, n in enumerate(names)}


def _int64(value: Any) -> Any:
    # int64 travels as a JSON string in proto3 JSON.
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
        return int(value)
    return value


def _float(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


DURATION_RE = re.compile(r"^(-)?(\d+)(?:\.(\d{1,9}))?s\Z")


def _duration(value: Any) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        # YAML reads `timeout: 5` as a number, which proto JSON refuses for a Duration: say what to write.
        raise PydanticCustomError(
            "duration", "a Duration is text with an 's' suffix: write '{value}s' for {value} seconds", {"value": value}
        )
    if isinstance(value, str) and not DURATION_RE.match(value):
        raise PydanticCustomError(
            "duration",
            "a Duration is seconds with up to 9 fractional digits and an 's' suffix, e.g. '30s' or '1.5s'; got '{value}'",
            {"value": value},
        )
    return value


def _bytes(value: Any) -> Any:
    if isinstance(value, str):
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise PydanticCustomError("base64", "bytes must be base64 text (PEM files: base64 of the whole file)") from None
    return value


Int64 = Annotated[int, _KindMarker(Kind.INT64), BeforeValidator(_int64)]
Float32 = Annotated[float, _KindMarker(Kind.FLOAT), BeforeValidator(_float)]
Double = Annotated[float, _KindMarker(Kind.DOUBLE), BeforeValidator(_float)]
Duration = Annotated[str, _KindMarker(Kind.DURATION), BeforeValidator(_duration)]
Timestamp = Annotated[str, _KindMarker(Kind.TIMESTAMP)]
Bytes = Annotated[str, _KindMarker(Kind.BYTES), BeforeValidator(_bytes)]
Struct = Annotated[dict[str, Any], _KindMarker(Kind.STRUCT)]
Value = Annotated[Any, _KindMarker(Kind.VALUE)]
FieldMask = Annotated[str, _KindMarker(Kind.STRING)]  # JSON: comma-separated camelCase paths
AnyMessage = Annotated[dict[str, Any], _KindMarker(Kind.STRUCT)]  # google.protobuf.Any: an object with "@type"

# Resource-name formats the API documents for reference fields.
RESOURCE_PATTERNS: dict[str, tuple[str, str]] = {
    "connection": (
        r"projects/[^/]+/locations/[^/]+/connections/[^/]+",
        "projects/{project}/locations/{location}/connections/{connection}",
    ),
    "dataStore": (
        r"projects/[^/]+/locations/[^/]+/(?:collections/[^/]+/)?dataStores/[^/]+",
        "projects/{project}/locations/{location}/collections/{collection}/dataStores/{dataStore}",
    ),
    "engine": (
        r"projects/[^/]+/locations/[^/]+/(?:collections/[^/]+/)?engines/[^/]+",
        "projects/{project}/locations/{location}/collections/{collection}/engines/{engine}",
    ),
    "agent": (
        r"projects/[^/]+/locations/[^/]+/(?:apps/[^/]+/)?agents/[^/]+",
        "projects/{project}/locations/{location}/agents/{agent}",
    ),
    "secretVersion": (r"projects/[^/]+/secrets/[^/]+/versions/[^/]+", "projects/{project}/secrets/{secret}/versions/{version}"),
    "service": (
        r"projects/[^/]+/locations/[^/]+/namespaces/[^/]+/services/[^/]+",
        "projects/{project}/locations/{location}/namespaces/{namespace}/services/{service}",
    ),
    "ragCorpus": (
        r"projects/[^/]+/locations/[^/]+/ragCorpora/[^/]+",
        "projects/{project}/locations/{location}/ragCorpora/{rag_corpus}",
    ),
    "contextVariable": (r"\$context\.variables\.[A-Za-z_][A-Za-z0-9_]*", "$context.variables.<name>"),
    "serviceAccount": (r"[^@\s]+@[^@\s]+\.[^@\s]+", "an e-mail address such as name@project.iam.gserviceaccount.com"),
}


def _glimpse(value: str) -> str:
    """What was written, saying nothing of it unless it is a name: a resource-name field holding
    something else may hold a credential pasted in the wrong place, and errors reach CI logs.
    No part of it is shown, not its first characters nor its length (either narrows a guess).
    A name that is one (projects/...) is shown, it helps and is no secret."""
    if value.startswith("projects/"):
        return f"'{value}'"  # whole: a cut could leave part of a sensitive value the final scrub misses
    return "something else (not shown: it may be a credential)"


def resource(kind: str) -> BeforeValidator:
    """A validator for a resource-name field of the given kind."""
    pattern, shape = RESOURCE_PATTERNS[kind]
    compiled = re.compile(pattern)

    def check(value: Any) -> Any:
        # "" is unset in proto3 (the API checks the format of a set name only); a required
        # field's "" is reported by ProtoModel as required instead.
        if isinstance(value, str) and value and not compiled.fullmatch(value):
            advice = ""
            if kind == "contextVariable":  # a header's value: never a secret of the repo, nor a ${VAR} of one
                advice = "; give the session the value as a context variable instead of writing it here"
            elif "secret" in kind.lower():
                advice = "; store the value in Secret Manager and give its version's name here"
            raise PydanticCustomError(
                "resource_name",
                "must be {shape}; got {value}{advice}",
                {"shape": shape, "value": _glimpse(value), "advice": advice},
            )
        return value

    return BeforeValidator(check)


def field_(
    behavior: Behavior = Behavior.OPTIONAL,
    doc: str = "",
    *,
    presence: bool = False,
    max_items: int | None = None,
    ge: float | None = None,
    le: float | None = None,
    alias: str | None = None,
) -> Any:
    """A model field with its API behaviour; required fields have no default."""
    extra: dict[str, Any] = {"x-behavior": behavior.value}
    if behavior is Behavior.OUTPUT_ONLY:
        extra["readOnly"] = True
    kwargs: dict[str, Any] = {"description": doc or None, "json_schema_extra": extra}
    if behavior is not Behavior.REQUIRED:
        kwargs["default"] = None
    if max_items is not None:
        kwargs["max_length"] = max_items
    if ge is not None:
        kwargs["ge"] = ge
    if le is not None:
        kwargs["le"] = le
    if alias is not None:  # a JSON name that pydantic reserves (e.g. "schema")
        kwargs["alias"] = alias
    info = Field(**kwargs)
    info.metadata.append(Meta(behavior, presence, max_items, doc))
    return info


class ProtoModel(BaseModel):
    """Base of every CES message. Unknown keys are errors; names are camelCase."""

    # defer_build: of the 253 generated messages a run validates a few; the rest never build a schema.
    model_config = ConfigDict(extra="forbid", strict=True, protected_namespaces=(), frozen=False, defer_build=True)

    # oneof name -> (members, whether exactly one is required)
    oneofs: ClassVar[dict[str, tuple[tuple[str, ...], bool]]] = {}
    # The message's full name in the API description (cesync.api.descriptors): its facts, its dropped fields.
    message_name: ClassVar[str] = ""

    # oneofs: set in the class body (as scripts/gen_api.py writes it), where __init_subclass__ finds it.

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Each class's checks, on what it has alone: _required_not_default on its REQUIRED fields,
        _check_oneofs when it has oneofs. Put on every class and field ("*"), pydantic bound both
        to each of the 137 classes (two fifths of making them) and, building a schema, inspected
        the field check once per field (a third of building Tool's) and called the model check
        for every message validated, for fields and messages they pass as they are."""
        super().__init_subclass__(**kwargs)
        own = [n for n, v in vars(cls).items() if isinstance(v, FieldInfo) and _is_required(v)]
        if own:  # a class without one of its own keeps its base's check, if any
            bases = [b for b in cls.__mro__[1:] if issubclass(b, ProtoModel)]
            held = [n for b in bases for n, v in b.model_fields.items() if _is_required(v)]
            check = field_validator(*dict.fromkeys([*held, *own]), mode="after")(classmethod(_required_not_default))
            setattr(cls, _REQUIRED_CHECK, check)
        if vars(cls).get("oneofs"):  # its own; a base's come with the base's check
            setattr(cls, _ONEOF_CHECK, model_validator(mode="after")(_check_oneofs))


# The names pydantic keys the checks by: a class's replaces its base's (which covers fewer fields).
_REQUIRED_CHECK, _ONEOF_CHECK = "_required_not_default", "_check_oneofs"


def _check_oneofs(self: ProtoModel) -> ProtoModel:
    for oneof, (members, required) in self.oneofs.items():
        chosen = [m for m in members if getattr(self, m) is not None]
        if len(chosen) > 1:
            raise PydanticCustomError(
                "oneof",
                "at most one of {members} may be set; found {chosen}",
                {"members": ", ".join(members), "chosen": " and ".join(chosen)},
            )
        if required and not chosen:
            raise PydanticCustomError(
                "oneof_missing",
                "exactly one of {members} must be set ({oneof})",
                {"members": ", ".join(members), "oneof": oneof},
            )
    return self


def _is_required(info: FieldInfo) -> bool:
    return any(isinstance(m, Meta) and m.behavior is Behavior.REQUIRED for m in info.metadata)


def _required_not_default(cls: type[ProtoModel], value: Any, info: ValidationInfo) -> Any:
    # proto3 cannot tell a scalar's default ("", 0, false, enum 0) or an empty list
    # from unset, so the API rejects a REQUIRED field holding one as missing.
    default = _required_defaults(cls).get(info.field_name or "")
    if default is not None and value == default[0] and type(value) is type(default[0]):
        raise PydanticCustomError(
            "required_empty", "{field} is required and must not be {empty}", {"field": default[1], "empty": default[2]}
        )
    return value


@dataclass(frozen=True)
class FieldSpec:
    """What normalization, validation and the emulator need to know of one field."""

    name: str
    kind: Kind
    behavior: Behavior = Behavior.OPTIONAL
    repeated: bool = False
    map: bool = False
    message: type[ProtoModel] | None = None
    enum: dict[str, int] = field(default_factory=dict)
    presence: bool = False
    oneof: str | None = None
    max_items: int | None = None

    @property
    def output_only(self) -> bool:
        return self.behavior is Behavior.OUTPUT_ONLY


def _unwrap_optional(tp: Any) -> Any:
    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


def _scalar(tp: Any, markers: list[Any]) -> tuple[Kind, dict[str, int], type[ProtoModel] | None]:
    for m in markers:
        if isinstance(m, _KindMarker):
            return m.kind, {}, None
        if isinstance(m, ProtoEnum):
            return Kind.ENUM, m.table(get_args(tp)), None
    if isinstance(tp, type) and issubclass(tp, ProtoModel):
        return Kind.MESSAGE, {}, tp
    simple = {str: Kind.STRING, bool: Kind.BOOL, int: Kind.INT32, float: Kind.DOUBLE}
    if tp in simple:
        return simple[tp], {}, None
    raise TypeError(f"cannot map type {tp!r} to a proto kind")


def _split(tp: Any) -> tuple[Any, list[Any]]:
    if get_origin(tp) is Annotated:
        base, *markers = get_args(tp)
        inner, more = _split(base)
        return inner, markers + more
    return tp, []


@cache
def specs(model: type[ProtoModel]) -> dict[str, FieldSpec]:
    """The field table of a message, by JSON name, derived once from the model."""
    _complete(model)
    oneof_of = {m: name for name, (members, _) in model.oneofs.items() for m in members}
    table: dict[str, FieldSpec] = {}
    for name, info in model.model_fields.items():
        meta = next((m for m in info.metadata if isinstance(m, Meta)), Meta())
        tp, markers = _split(_unwrap_optional(info.annotation))
        markers = list(info.metadata) + markers  # pydantic lifts top-level Annotated markers
        repeated = is_map = False
        if get_origin(tp) is list:
            repeated, (tp,) = True, get_args(tp)
        elif get_origin(tp) is dict and not any(isinstance(m, _KindMarker) for m in markers):
            is_map, (_, tp) = True, get_args(tp)
        tp, more = _split(tp)
        kind, enum_table, message = _scalar(tp, markers + more)
        table[info.alias or name] = FieldSpec(
            name=info.alias or name,
            kind=kind,
            behavior=meta.behavior,
            repeated=repeated,
            map=is_map,
            message=message,
            enum=enum_table,
            presence=meta.presence or kind is Kind.MESSAGE,
            oneof=oneof_of.get(info.alias or name),
            max_items=meta.max_items,
        )
    return table


_DEFAULTS: dict[Kind, tuple[Any, str]] = {
    Kind.STRING: ("", "empty"),
    Kind.BYTES: ("", "empty"),
    Kind.INT32: (0, "0"),
    Kind.INT64: (0, "0"),
    Kind.DOUBLE: (0.0, "0"),
    Kind.FLOAT: (0.0, "0"),
    Kind.BOOL: (False, "false"),
}


@cache
def _required_defaults(model: type[ProtoModel]) -> dict[str, tuple[Any, str, str]]:
    """Python attribute name -> (the value the API reads as unset, JSON name, how to say it) of REQUIRED fields.

    Oneof members are left out: setting one to its default still chooses it.
    """
    by_json = {info.alias or name: name for name, info in model.model_fields.items()}
    out: dict[str, tuple[Any, str, str]] = {}
    for json_name, spec in specs(model).items():
        if spec.behavior is not Behavior.REQUIRED or spec.oneof is not None:
            continue
        if spec.repeated or spec.map:
            out[by_json[json_name]] = ([] if spec.repeated else {}, json_name, "empty")
        elif spec.kind is Kind.ENUM:
            zero = next((n for n, number in spec.enum.items() if number == 0), None)
            if zero is not None:
                out[by_json[json_name]] = (zero, json_name, zero)
        elif spec.kind in _DEFAULTS:
            value, said = _DEFAULTS[spec.kind]
            out[by_json[json_name]] = (value, json_name, said)
    return out


def resolve_forward_refs(namespace: dict[str, Any]) -> None:
    """Nothing to do at import: models build on first use (defer_build), resolving their
    forward references (Schema is recursive) in their module; specs() completes the fields."""
    del namespace


def build(model: type[ProtoModel]) -> None:
    """Build the model's validator now rather than on its first use (defer_build): before a
    fork, so that both processes have it (each built it once, 0.08 s for Tool)."""
    if not model.__pydantic_complete__:
        model.model_rebuild(_types_namespace=vars(sys.modules[model.__module__]))


def _complete(model: type[ProtoModel]) -> None:
    if not model.__pydantic_fields_complete__:
        model.model_rebuild(_types_namespace=vars(sys.modules[model.__module__]))
