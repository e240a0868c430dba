"""The saved plan file (``plan --out``) as a pydantic model: a malformed file is a clear error.

The model only says what a well-formed file is. Whether its changes may be applied is
decided by :func:`cesync.core.narrow.narrow` against the repo and the app at apply time: a
file is never trusted for what it asks.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..api.jsonvalue import JsonValueError, loads
from ..api.kinds import KINDS
from ..errors import PlanFileError

__all__ = ["Action", "PlanFile", "parse_plan_file"]

MAX_ERRORS = 5
_KEYED = r"^hmac-sha256:[0-9a-f]{64}$"
_KEYED_OR_EMPTY = r"^(hmac-sha256:[0-9a-f]{64})?$"
Action = Literal["create", "update", "delete"]  # what a change does (cesync.core.plan.Change.action)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class FieldChangeFile(_Strict):
    path: str
    before: Any = None
    after: Any = None


class ChangeFile(_Strict):
    kind: str
    id: str = Field(min_length=1)
    action: Action
    name: str = Field(min_length=1)
    etag: str = ""
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    body: dict[str, Any] | None = None
    fields: list[FieldChangeFile] = Field(default_factory=list)
    update_mask: list[str] = Field(default_factory=list)
    depends_on: list[str] = Field(default_factory=list)
    level: int = 0
    note: str = ""
    deferred: list[str] = Field(default_factory=list)
    patch_after: list[str] = Field(default_factory=list)
    drift: dict[str, Any] | None = None
    body_hash: str = Field("", pattern=_KEYED_OR_EMPTY)
    first: bool = False
    force: bool = False

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, kind: str) -> str:
        if kind not in KINDS:
            raise ValueError(f"{kind!r} is not a kind cesync manages ({', '.join(KINDS)})")
        return kind


class SealedFile(_Strict):
    salt: str = Field("", pattern=r"^([0-9a-f]{32})?$")
    key: str = ""
    values: dict[str, str] = Field(default_factory=dict)
    fields: dict[str, list[list[str | int]]] = Field(default_factory=dict)


class FindingFile(_Strict):
    rule: str
    verdict: Literal["deny", "warn"]
    subject: str
    message: str
    source: str = ""


class ImpactNodeFile(_Strict):
    kind: str
    id: str
    mark: Literal["create", "update", "delete", "affected"]


class ImpactLinkFile(_Strict):
    source: str
    target: str
    field: str


class ImpactFile(_Strict):
    nodes: list[ImpactNodeFile] = Field(default_factory=list)
    links: list[ImpactLinkFile] = Field(default_factory=list)


class PlanFile(_Strict):
    format_version: int
    cesync_version: str
    environment: str
    app: str
    digest: str = Field(pattern=_KEYED)
    changes: list[ChangeFile] = Field(default_factory=list)
    unmanaged: list[str] = Field(default_factory=list)
    unknown_fields: dict[str, list[str]] = Field(default_factory=dict)
    validation: dict[str, list[str]] = Field(default_factory=dict)
    managed: int = Field(0, ge=0)
    prune: bool = False
    targets: list[str] = Field(default_factory=list)
    refused: str = ""
    app_lock: str = ""
    resend_input_only: bool = False
    created_at: str = ""
    endpoint: str = ""
    promoted_from: str = ""
    commit: str = Field("", pattern=r"^([0-9a-f]{40})?$")
    sensitive: SealedFile = Field(default_factory=SealedFile)
    record: str = ""
    owned: list[str] = Field(default_factory=list)
    prune_unmanaged: bool = False
    destroy: bool = False
    ignored: dict[str, list[str]] = Field(default_factory=dict)
    policy: list[FindingFile] = Field(default_factory=list)
    labels: list[str] = Field(default_factory=list)
    owners: dict[str, str] = Field(default_factory=dict)
    record_notes: list[str] = Field(default_factory=list)
    impact: ImpactFile = Field(default_factory=ImpactFile)
    affected: dict[str, dict[Literal["evaluations", "toolTests"], list[str]]] = Field(default_factory=dict)
    seal: str = Field("", pattern=_KEYED_OR_EMPTY)  # "" only in plans never saved (diff, rollback): apply refuses them


def parse_plan_file(text: str, source: str, version: int) -> PlanFile:
    """The validated file, or PlanFileError naming what is wrong and where (a JSON path)."""
    try:
        raw = loads(text)
    except JsonValueError as exc:
        raise PlanFileError(f"{source} is not a cesync plan: {exc}") from None
    if not isinstance(raw, dict):
        raise PlanFileError(f"{source} is not a cesync plan: not a JSON object")
    if raw.get("format_version") != version:
        raise PlanFileError(
            f"{source}: plan format {raw.get('format_version')!r} is not {version}; make a new plan with this cesync"
        )
    try:
        return PlanFile.model_validate(raw)
    except ValidationError as exc:
        errors = exc.errors()
        lines = [f"{_where(e['loc'])}: {e['msg']}" for e in errors[:MAX_ERRORS]]
        more = f" (and {len(errors) - MAX_ERRORS} more)" if len(errors) > MAX_ERRORS else ""
        raise PlanFileError(f"{source} is not a valid cesync plan: {'; '.join(lines)}{more}") from None


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"
