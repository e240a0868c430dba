"""The plan: plain, immutable, ordered data with a versioned JSON form (pure).

    planbuild.run_passes(PlanInput) -> Plan  ->  render (text, markdown, json)
                                             ->  apply (executes plan.changes in order)

Beside it: planseal.py (the digest, body hashes and seal that bind a saved plan), narrow.py (a
saved plan may only narrow), safety.py (the mass-change guard), applock.py (the app's lock)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from dataclasses import fields as dataclass_fields
from typing import Any, get_args

from .. import __version__
from ..api.kinds import KINDS, ResourceKind
from .diff import FieldChange
from .planfile import Action, PlanFile, parse_plan_file
from .policy import Finding
from .sensitive import mask

__all__ = ["ACTIONS", "FORMAT_VERSION", "RESENT", "Action", "Change", "Plan", "Sealed"]

FORMAT_VERSION = 3


RESENT = "(sensitive, input only: sent again)"

IN_MEMORY = frozenset({"read"})  # Change fields a saved plan never holds
PLAN_IN_MEMORY = frozenset({"same"})  # Plan fields a saved plan never holds


ACTIONS: tuple[Action, ...] = get_args(Action)


@dataclass(frozen=True)
class Change:
    kind: ResourceKind  # saved, rendered and hashed as its name
    id: str
    action: Action
    name: str  # full resource name
    etag: str = ""  # the remote etag seen at plan time (update, delete)
    before: dict[str, Any] | None = None  # canonical remote
    after: dict[str, Any] | None = None  # canonical desired
    body: dict[str, Any] | None = None  # what create/update sends (wire JSON)
    fields: tuple[FieldChange, ...] = ()
    update_mask: tuple[str, ...] = ()
    depends_on: tuple[str, ...] = ()  # resource names that must exist first
    level: int = 0
    note: str = ""
    deferred: tuple[str, ...] = ()  # create-then-patch: fields left out of the create (a reference cycle)
    patch_after: tuple[str, ...] = ()  # ... and patched in once these exist
    # the remote differs from what cesync last applied (the applied record): {"fields": [...], "by": ..., "at": ...}
    drift: dict[str, Any] | None = None
    body_hash: str = ""  # keyed hash of the unmasked body (see bind): a saved plan's masked fields are bound too
    # a rename's delete of a kind whose names are unique in the app: run before every create and update
    # (the new one's create waits for it), with force when every resource naming it is rewritten by the plan
    first: bool = False
    force: bool = False
    # the app's side of an update as the plan read it, unmasked: in memory only (never saved, rendered
    # or hashed), for apply to compare the app with just before it writes
    read: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> str:
        return f"{self.kind.name}/{self.id}"

    def public(self) -> dict[str, Any]:
        """The change as plain data (its kind as its name), as a saved plan holds it."""
        data = {f.name: getattr(self, f.name) for f in dataclass_fields(self) if f.name not in IN_MEMORY}
        return {**data, "kind": self.kind.name, "fields": [asdict(f) for f in self.fields]}


@dataclass(frozen=True)
class Sealed:
    """What a plan knows of sensitive values: never a value, only where they are and keyed hashes."""

    salt: str = ""  # hex, random per plan
    key: str = ""  # where the HMAC key came from: "CESYNC_PLAN_KEY" or "none"
    values: dict[str, str] = field(default_factory=dict)  # NAME -> keyed hash of its value
    fields: dict[str, list[list[str | int]]] = field(default_factory=dict)  # resource name -> body paths


@dataclass(frozen=True)
class Plan:
    environment: str
    app: str
    digest: str
    changes: tuple[Change, ...] = ()
    unmanaged: tuple[str, ...] = ()  # remote resources kept: prune is off, or cesync does not own them
    unknown_fields: dict[str, list[str]] = field(default_factory=dict)  # resource -> fields we do not model
    validation: dict[str, list[str]] = field(default_factory=dict)  # resource -> what CES reports wrong (core.validation)
    managed: int = 0  # resources the repo defines
    prune: bool = False
    targets: tuple[str, ...] = ()  # a --target plan: only these kind/id were compared (a partial plan)
    refused: str = ""  # why apply would refuse this plan (the mass-change guard), shown by every renderer
    app_lock: str = ""  # how the app's lock (App.locked) meets this plan, shown by every renderer
    resend_input_only: bool = False  # INPUT_ONLY fields the repo sets are sent again (--resend-input-only)
    created_at: str = ""
    endpoint: str = ""  # where the plan read the app; apply of a saved plan refuses any other
    promoted_from: str = ""  # cesync promote: the environment whose applied commit this plan was made from
    commit: str = ""  # ... and that commit: apply renders the repo as it is there, not the working tree
    sensitive: Sealed = field(default_factory=Sealed)
    record: str = ""  # the applied record (app version) the plan took as its base ("" without one)
    owned: tuple[str, ...] = ()  # "kind/id" cesync owns, from that record: what --prune may delete
    prune_unmanaged: bool = False  # --prune-unmanaged: also delete what cesync does not own
    destroy: bool = False  # --destroy: planned against nothing desired (every resource cesync owns deleted)
    ignored: dict[str, list[str]] = field(default_factory=dict)  # resource -> ignoreChanges paths that differ, left as they are
    # the repo's policy checks (core.policy) on this plan: a deny stops apply, a warn is shown
    policy: tuple[Finding, ...] = ()
    labels: tuple[str, ...] = ()  # plan --label: what reviewers said of the change (policies read them)
    owners: dict[str, str] = field(default_factory=dict)  # unmanaged resource name -> the other owner whose it is
    record_notes: tuple[str, ...] = ()  # records ignored (and why), or that records are not sealed
    # what the plan touches: changed resources and what uses them (core.graph.impact: nodes, links)
    impact: dict[str, Any] = field(default_factory=lambda: {"nodes": [], "links": []})
    # per changed resource ("kind/id"): the evaluations and tool tests that
    # exercise it (core.affected): {"evaluations": [ids], "toolTests": [ids]}; eval --affected-by reads it
    affected: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    seal: str = ""  # keyed hash of everything else in the saved file (see bind)
    cesync_version: str = __version__
    format_version: int = FORMAT_VERSION
    # the (desired, remote) pairs the compare pass found equal (core.diff.pair_digest): in memory
    # only, for the next run to skip (never saved, rendered or sealed)
    same: frozenset[bytes] = field(default=frozenset(), compare=False, repr=False)

    @property
    def has_changes(self) -> bool:
        return bool(self.changes)

    @property
    def drifted(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.drift is not None)

    @property
    def denied(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.policy if f.verdict == "deny")

    def counts(self) -> dict[str, int]:
        return {a: sum(1 for c in self.changes if c.action == a) for a in ACTIONS}

    def public(self) -> dict[str, Any]:
        """The plan as plain JSON data, every sensitive field of every body masked."""
        data = {f.name: getattr(self, f.name) for f in dataclass_fields(self) if f.name not in PLAN_IN_MEMORY}
        data["changes"] = [c.public() for c in self.changes]
        data["sensitive"] = asdict(self.sensitive)
        data["policy"] = [f.public() for f in self.policy]
        for change in data["changes"]:
            paths = self.sensitive.fields.get(change["name"])
            if paths and change["body"] is not None:
                change["body"] = mask(change["body"], [tuple(p) for p in paths])
        public: dict[str, Any] = json.loads(json.dumps(data))  # tuples become lists, as in a file
        return public

    def to_json(self) -> str:
        return json.dumps(self.public(), indent=2, sort_keys=False) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str = "plan") -> Plan:
        return _from_file(parse_plan_file(text, source, FORMAT_VERSION))


def _from_file(f: PlanFile) -> Plan:
    data = f.model_dump()
    changes = tuple(
        Change(
            **{
                **c,
                "kind": KINDS[c["kind"]],  # the file's model accepts only the registry's names
                "fields": tuple(FieldChange(**x) for x in c["fields"]),
                "update_mask": tuple(c["update_mask"]),
                "depends_on": tuple(c["depends_on"]),
                "deferred": tuple(c["deferred"]),
                "patch_after": tuple(c["patch_after"]),
            }
        )
        for c in data.pop("changes")
    )
    return Plan(
        **{
            **data,
            "changes": changes,
            "unmanaged": tuple(data["unmanaged"]),
            "owned": tuple(data["owned"]),
            "record_notes": tuple(data["record_notes"]),
            "targets": tuple(data["targets"]),
            "labels": tuple(data["labels"]),
            "policy": tuple(Finding(**f) for f in data["policy"]),
            "sensitive": Sealed(**data["sensitive"]),
        }
    )
