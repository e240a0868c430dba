"""Lint: checks of one resource body that the pydantic model cannot express (pure).

Unknown and output-only keys (with suggestions) and the checks on embedded documents;
parsing those documents is :mod:`cesync.core.documents`' job.

Each check returns ``(path, message)`` findings; the repo loader turns paths into
``file:line:col``. A finding in an included file names that file via ``Included``.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import TypeAdapter, ValidationError

from ..api import descriptors
from ..api.kinds import ResourceKind
from ..api.protojson import json_name
from ..models import FieldSpec, Kind, ProtoModel, specs
from .documents import parse_document, python_functions
from .toolset_form import toolset_form
from .walk import DROP, SpecWalker
from .yamlfile import Path_

__all__ = [
    "Finding",
    "check_body",
    "lint_keys",
    "server_made",
    "strangers",
    "suggest",
    "takes_only_context_variables",
    "unknown_field_advice",
]


@dataclass(frozen=True)
class Finding:
    path: Path_
    message: str
    key: bool = False  # point at the key rather than the value
    line_in_value: int | None = None  # for text values: 1-based line inside the text
    col_in_value: int | None = None


def suggest(key: str, known: list[str]) -> str:
    if json_name(key) in known:
        return f"; did you mean '{json_name(key)}'?"
    lower = {k.lower(): k for k in known}
    if key.lower() in lower:
        return f"; did you mean '{lower[key.lower()]}'?"
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def lint_keys(
    data: Any, model: type[ProtoModel], path: Path_ = (), set_aside: list[tuple[Path_, Any]] | None = None
) -> tuple[Any, list[Finding]]:
    """Report unknown and output-only keys (with suggestions) and return data without them.

    A field or enum value the models lack but the description in use has (a newer discovery
    document: cesync.api.descriptors.use_documents) is checked against the description; when
    ``set_aside`` is given it is taken out of the data (the models would refuse it) and listed
    there, (path, value), for the caller to put back after validating the rest with the model
    (an enum value is replaced by one the model knows until then).
    """
    walker = _LintKeys(set_aside)
    return walker.walk(data, model, path), walker.findings


class _LintKeys(SpecWalker):
    def __init__(self, set_aside: list[tuple[Path_, Any]] | None = None) -> None:
        self.findings: list[Finding] = []
        self.models: list[type[ProtoModel]] = []  # the message being walked, innermost last
        self.set_aside = set_aside

    def walk(self, data: Any, model: type[ProtoModel], path: Path_ = ()) -> Any:
        self.models.append(model)
        try:
            return super().walk(data, model, path)
        finally:
            self.models.pop()

    def unknown(self, key: str, value: Any, model: type[ProtoModel], path: Path_) -> Any:
        field = descriptors.fields_of(model.message_name).get(key) if model.message_name else None
        if field is not None:  # newer than the models: the description in use has it
            return self._newer(key, value, model, field.name, path)
        known = [k for k in specs(model) if not descriptors.removed(model.message_name, k)]
        hint = suggest(key, known)
        if not _typo(key, known):  # perhaps a field CES has that cesync does not know yet
            hint += f"; {unknown_field_advice(model.message_name)}"
        self.findings.append(Finding(path, f"unknown field '{key}' in {model.__name__}{hint}", key=True))
        return DROP

    def _newer(self, key: str, value: Any, model: type[ProtoModel], proto_name: str, path: Path_) -> Any:
        gone = descriptors.removed(model.message_name, key)
        if gone:
            self.findings.append(Finding(path, _dropped(model, key, gone), key=True))
            return DROP
        if "OUTPUT_ONLY" in descriptors.behaviors(model.message_name, proto_name):
            self.findings.append(Finding(path, f"'{key}' is output only (set by the server); remove it", key=True))
            return DROP
        inside = _output_only_inside(descriptors.fields_of(model.message_name)[key], value, path)
        if inside:
            self.findings.extend(
                Finding(at, f"'{at[-1]}' is output only (set by the server); remove it", key=True) for at in inside
            )
            return DROP
        _, why = descriptors.canonical_value(model.message_name, key, value)
        if why is not None:
            self.findings.append(Finding(path, f"{key}: {why} (CES API revision {descriptors.revision()})"))
            return DROP
        if self.set_aside is None:
            return value
        self.set_aside.append((path, value))
        return DROP

    def skip(self, spec: FieldSpec, value: Any, path: Path_) -> bool:
        model = self.models[-1]
        gone = descriptors.removed(model.message_name, spec.name)
        if gone:
            self.findings.append(Finding(path, _dropped(model, spec.name, gone), key=True))
            return True
        if spec.output_only:
            self.findings.append(Finding(path, f"'{path[-1]}' is output only (set by the server); remove it", key=True))
        return spec.output_only

    def value(self, spec: FieldSpec, value: Any, path: Path_, parent: dict[str, Any]) -> Any:
        if spec.kind is not Kind.ENUM or self.set_aside is None:
            return value
        newer = self._newer_enum_values(spec)
        if not newer:
            return value
        stand_in = next((n for n, number in spec.enum.items() if number != 0), None)
        if spec.repeated and isinstance(value, list):
            out = []
            for i, item in enumerate(value):
                if isinstance(item, str) and item in newer and stand_in is not None:
                    self.set_aside.append(((*path, i), item))
                    item = stand_in
                out.append(item)
            return out
        if isinstance(value, str) and value in newer and stand_in is not None:
            self.set_aside.append((path, value))
            return stand_in
        return value

    def _newer_enum_values(self, spec: FieldSpec) -> set[str]:
        """The values of this enum field the description in use has and the model lacks."""
        field = descriptors.fields_of(self.models[-1].message_name).get(spec.name)
        if field is None or field.enum_type is None:
            return set()
        return {v.name for v in field.enum_type.values} - set(spec.enum)


def _output_only_inside(field: Any, value: Any, path: Path_) -> list[Path_]:
    """Where a newer field's value sets an output-only field of the message the newer document
    gives it: the models never saw that message, so the walk cannot skip it; sent, the server
    would drop it and no plan would be empty. Iterative: the value's depth is the file's."""
    found: list[Path_] = []
    stack: list[tuple[Any, Any, Path_]] = [(field, value, path)]
    while stack:
        f, v, at = stack.pop()
        message = f.message_type
        if message is None or message.full_name.startswith("google.protobuf."):
            continue
        if message.GetOptions().map_entry:
            if isinstance(v, dict):
                stack.extend((message.fields_by_name["value"], item, (*at, k)) for k, item in v.items())
            continue
        items = list(enumerate(v)) if isinstance(v, list) and f.label == f.LABEL_REPEATED else [(None, v)]
        for i, item in items:
            where = at if i is None else (*at, i)
            if not isinstance(item, dict):
                continue
            by_json = {sub.json_name: sub for sub in message.fields}
            for k, sub_value in item.items():
                sub = by_json.get(k)
                if sub is None:
                    continue
                if "OUTPUT_ONLY" in descriptors.behaviors(message.full_name, sub.name):
                    found.append((*where, k))
                else:
                    stack.append((sub, sub_value, (*where, k)))
    return sorted(found, key=str)


def strangers(data: Any, model: type[ProtoModel]) -> list[str]:
    """The fields (``Message.field``) and enum values (``Message.field=VALUE``) a repo file writes
    that neither the models nor the description in use know, and that are no typo of one they
    know: what a newer description of the API might have. Read before the file renders, so the
    repo's own forms of a known field's value ({ref: ...}, {file: ...}, ${VAR}) are passed over."""
    found: list[str] = []
    _strangers(data, model, found)
    return found


def _strangers(data: Any, model: type[ProtoModel], found: list[str]) -> None:
    """strangers of one message, appended to found. The walk of SpecWalker (message fields
    entered: a list item by item, a map entry by entry) without the copy it makes of the data:
    every file of the repo is read so before anything else, and only the names are wanted."""
    if not isinstance(data, dict):
        return
    table = specs(model)
    for key, value in data.items():
        spec = table.get(key)
        if spec is None:
            known = descriptors.fields_of(model.message_name) if model.message_name else {}
            if key not in known and key not in ("ref", "file") and not _typo(key, list(table)):
                found.append(f"{descriptors.short_name(model.message_name) or model.__name__}.{key}")
        elif spec.message is not None:
            if spec.repeated and isinstance(value, list):
                for item in value:
                    _strangers(item, spec.message, found)
            elif spec.map and isinstance(value, dict):
                for item in value.values():
                    _strangers(item, spec.message, found)
            else:
                _strangers(value, spec.message, found)
        elif spec.kind is Kind.ENUM:
            _stranger_values(spec, value, model, found)


def _stranger_values(spec: FieldSpec, value: Any, model: type[ProtoModel], found: list[str]) -> None:
    items = value if isinstance(value, list) else [value]
    if any(isinstance(item, str) and item not in spec.enum for item in items):
        field = descriptors.fields_of(model.message_name).get(spec.name)
        known = {v.name for v in field.enum_type.values} if field is not None and field.enum_type else set(spec.enum)
        for item in items:
            typo = isinstance(item, str) and difflib.get_close_matches(item.upper(), list(known), n=1, cutoff=0.8)
            if isinstance(item, str) and item not in known and "${" not in item and not typo:
                found.append(f"{descriptors.short_name(model.message_name)}.{spec.name}={item}")


def _typo(key: str, known: list[str]) -> bool:
    """Whether ``key`` is surely a misspelling of a known field (snake_case, case, one or two letters)."""
    lower = {k.lower() for k in known}
    return json_name(key) in known or key.lower() in lower or bool(difflib.get_close_matches(key, known, n=1, cutoff=0.8))


def unknown_field_advice(message_name: str = "") -> str:
    """What to do about a field (or enum value) the description does not have."""
    of = f" of {descriptors.short_name(message_name)}" if message_name else ""
    return (
        f"CES API revision {descriptors.revision()} (the newest description{of} cesync has) lacks it. If CES has it "
        "now, give cesync a newer description: name Google's discovery document in cesync.yaml "
        "(api: {discovery: {v1: FILE}}), or run where cesync can fetch it from ces.googleapis.com"
        + (f" (fetching it failed: {why})" if (why := descriptors.unavailable()) else "")
    )


def _dropped(model: type[ProtoModel], name: str, revision: str) -> str:
    """A field CES no longer has: the API would refuse it (or, worse, ignore it)."""
    instead = [k for k in specs(model) if k != name and not descriptors.removed(model.message_name, k)]
    hint = suggest(name, instead).removeprefix("; did you mean ").removesuffix("?")
    said = f"; use {hint} instead" if hint else ""
    return (
        f"'{name}' is no longer a field of {model.__name__}: Google's discovery document for CES "
        f"(revision {revision}) dropped it, so the API refuses it{said}; remove it"
    )


# Why each server-made tool type cannot be a file of the repo (sources: api.kinds.SERVER_MADE_TOOLS).
_MADE_BY = {
    "openApiTool": "CES makes OpenAPI tools from an openApiToolset, one per operation of its schema",
    "connectorTool": "CES makes connector tools from a connectorToolset, one per action",
    "mcpTool": "CES makes MCP tools from an mcpToolset, one per tool its server offers",
    "systemTool": "system tools come with every app",
    "remoteAgentTool": "a remote agent (A2A) tool is configured outside the app's tools and no API call of "
    "Google's documents writing one",
}


def server_made(kind: ResourceKind, rid: str, data: Any) -> list[Finding]:
    """A file of a type CES makes itself (CreateTool and UpdateTool refuse it), with what to write instead."""
    made = kind.server_made
    member = next((m for m in made if isinstance(data, dict) and m in data), None)
    if member is None:
        return []
    made_by = _MADE_BY.get(member, "CES makes it itself")
    why = (
        f"{member} cannot be created or updated as a {kind}: {made_by} (Terraform's google_ces_{kind} marks {member} output only)"
    )
    form = toolset_form(data)
    if form is None:
        return [Finding((member,), f"{why}; remove this file (name the {kind} by its resource name where you use it)", key=True)]
    body, dropped = form
    from .yamlout import to_yaml  # only for this message

    shown = "".join(f"      {line}\n" for line in to_yaml(body).splitlines())
    left = f" ({', '.join(dropped)} has no place there: the server names the toolset's tools)" if dropped else ""
    return [
        Finding(
            (member,),
            f"{why}. Write it as toolsets/{rid}.yaml{left}, and name it in an agent as "
            f"toolsets: [{{toolset: {{ref: toolsets/{rid}}}}}]; 'cesync convert-tools' does both:\n{shown.rstrip()}",
            key=True,
        )
    ]


def check_openapi(text: str, path: Path_) -> list[Finding]:
    try:
        doc = parse_document(text)
    except ValueError as exc:
        return [Finding(path, f"openApiSchema is {exc}")]
    if not isinstance(doc, dict):
        return [Finding(path, "openApiSchema must be an OpenAPI document (a mapping)")]
    if "openapi" not in doc and "swagger" not in doc:
        return [Finding(path, "openApiSchema has no 'openapi' version field")]
    # A schema without operations (``paths: {}``) is not refused: the toolset then makes no tools,
    # and CES accepts it (the openApiToolset of Google's Terraform samples, e.g.
    # mmv1/templates/terraform/samples/services/ces/ces_toolset_openapi_api_key_config.tf.tmpl).
    return []


def check_python(code: str, path: Path_, name: str | None) -> list[Finding]:
    try:
        functions = python_functions(code)
    except SyntaxError as exc:
        return [Finding(path, f"pythonCode does not parse: {exc.msg}", line_in_value=exc.lineno, col_in_value=exc.offset)]
    except (ValueError, RecursionError) as exc:
        return [Finding(path, f"pythonCode does not parse: {exc}")]
    if name and name not in functions:
        known = ", ".join(functions) or "none"
        return [Finding(path, f"pythonCode defines no function '{name}' (functions: {known})")]
    if not functions:
        return [Finding(path, "pythonCode defines no top-level function")]
    return []


def check_body(kind: ResourceKind, body: dict[str, Any]) -> list[Finding]:
    """Checks beyond the model, on a validated body (wire JSON)."""
    findings: list[Finding] = []
    findings += _custom_headers(body)
    for field in ("openApiTool", "openApiToolset"):
        schema = body.get(field, {}).get("openApiSchema")
        if isinstance(schema, str):
            findings += check_openapi(schema, (field, "openApiSchema"))
    fn = body.get("pythonFunction")
    if isinstance(fn, dict) and fn.get("pythonCode") is not None:
        findings += check_python(fn["pythonCode"], ("pythonFunction", "pythonCode"), fn.get("name"))
    code = body.get("toolFakeConfig", {}).get("codeBlock", {}).get("pythonCode")
    if code is not None:
        findings += check_python(code, ("toolFakeConfig", "codeBlock", "pythonCode"), None)
    mapping = body.get("widgetTool", {}).get("dataMapping", {}).get("pythonFunction")
    if isinstance(mapping, dict) and mapping.get("pythonCode") is not None:
        findings += check_python(
            mapping["pythonCode"], ("widgetTool", "dataMapping", "pythonFunction", "pythonCode"), mapping.get("name")
        )
    return findings


CONTEXT_VARIABLE = re.compile(r"^\$context\.variables\.[A-Za-z_][A-Za-z0-9_]*\Z")
# The messages whose customHeaders values the API documents as $context.variables.<name> only.
HEADER_FIELDS = ("mcpToolset", "mcpTool")


def takes_only_context_variables(model: type[ProtoModel], path: Sequence[str | int]) -> bool:
    """Whether the text at path of a model's body may only be ``$context.variables.<name>``: a
    field of that format (BearerTokenConfig.token, the OAuth pass-through names) or a value of
    an MCP tool's customHeaders. A credential there is given to the session, not to the repo,
    so neither a Secret Manager version nor a 'sensitive:' variable fits."""
    if len(path) == 3 and path[0] in HEADER_FIELDS and path[1] == "customHeaders":
        return True
    parts = [p for p in path if isinstance(p, str)]  # list indices do not change the field
    current: type[ProtoModel] | None = model
    owner: type[ProtoModel] | None = model
    last: FieldSpec | None = None
    i = 0
    while i < len(parts):
        spec = specs(current).get(parts[i]) if current is not None else None
        if spec is None:
            return False
        owner, last, current = current, spec, spec.message
        i += 2 if spec.map else 1  # a map's next part is one of its keys
    return (
        owner is not None
        and last is not None
        and last.kind is Kind.STRING
        and not last.map
        and _context_variable_field(owner, last.name)
    )


@functools.cache
def _context_variable_field(model: type[ProtoModel], name: str) -> bool:
    """The field accepts a context variable and refuses other text (the model's format check)."""
    info = model.model_fields.get(name)
    if info is None:
        return False
    adapter: TypeAdapter[Any] = TypeAdapter(Annotated[(info.annotation, *info.metadata)])  # type: ignore[arg-type]

    def accepts(value: str) -> bool:
        try:
            adapter.validate_python(value)
        except ValidationError:
            return False
        return True

    return accepts("$context.variables.x") and not accepts("x")


def _custom_headers(body: dict[str, Any]) -> list[Finding]:
    """MCP customHeaders values must be $context.variables.<name> (the API requires that form)."""
    findings: list[Finding] = []
    for field in HEADER_FIELDS:
        headers = body.get(field, {}).get("customHeaders")
        for name, value in (headers or {}).items():
            if not (isinstance(value, str) and CONTEXT_VARIABLE.match(value)):
                findings.append(
                    Finding(
                        (field, "customHeaders", name),
                        f"customHeaders.{name} must be $context.variables.<name> (the API requires that form; a literal "
                        "value, or a ${VAR} substituted into one, is refused): give the session the value as a context "
                        "variable, or for a credential use apiAuthentication with a Secret Manager version "
                        "(apiKeySecretVersion, ...)",
                    )
                )
    return findings
