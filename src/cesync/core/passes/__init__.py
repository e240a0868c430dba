"""The plan's passes: small pure functions, each from a plan (and what the pipeline read, as one
``PlanInput``) to the next plan. ``cesync.core.planbuild`` runs them in order (``PASSES``)::

    PlanInput -> start -> compare -> ignore -> targets -> carry -> ownership -> other_owners -> lock
              -> masking -> renames -> order -> drift -> sealed_drift -> record_notes
              -> safety -> impact -> affected -> policy -> seal -> Plan

Each pass holds one rule and its own tests (tests/core/passes/); nothing else in the code
knows the rule exists. Everything a pass needs that comes from outside (the app, the record,
the changelogs, the clock, the keys) is read by the pipeline before the chain and handed in
here as plain data. A new rule is a new pass: see docs/architecture.md, "Adding a plan rule".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

from ...api.resource import Resource
from ..plan import Plan
from ..policy import CompiledRule
from ..yamlfile import Path_

__all__ = ["Compared", "Mapper", "Pass", "PlanInput", "RecordsInput", "SafetyLimits", "SealInput", "in_turn"]

T = TypeVar("T")
R = TypeVar("R")

# How a pass has a pure function of a list done, item by item in order: work(items), or the same
# results made on more than one core (the pipeline hands in repo.parallel.run).
Mapper = Callable[[list[Any], Callable[[list[Any]], list[Any]]], list[Any]]


def in_turn(items: list[T], work: Callable[[list[T]], list[R]]) -> list[R]:
    """The Mapper of one process: work(items)."""
    return work(items)


@dataclass(frozen=True)
class SafetyLimits:
    """The mass-change guard's limits (cesync.yaml's ``safety``)."""

    max_change_fraction: float
    min_resources: int
    max_update_fraction: float = 0.8


@dataclass(frozen=True)
class Compared:
    """What earlier runs compared: the (desired, remote) pairs the diff found equal
    (cesync.core.diff.pair_digest with this salt, which names the API description in use)."""

    salt: bytes
    same: frozenset[bytes] = frozenset()


@dataclass(frozen=True)
class SealInput:
    """What the seal pass writes into the plan: where it was made, the keyed hashes of the
    sensitive values (never a value), and the salt and key source they were made with."""

    salt: str
    key_source: str  # "CESYNC_PLAN_KEY" or "none"
    values: Mapping[str, str] = field(default_factory=dict)  # NAME -> keyed hash of its value
    endpoint: str = ""
    promoted_from: str = ""
    commit: str = ""
    # how the saved file's text is scrubbed (the run's Scrubber.scrub): the seal covers that text
    scrub: Callable[[str], str] = str


@dataclass(frozen=True)
class RecordsInput:
    """What the app's records say beyond the newest one's snapshot (cesync.sync.record.RecordView):
    what other owners own, the sealed hashes of what cesync applied, the records ignored."""

    owner: str = ""  # this repo's owner namespace (cesync.yaml owner)
    others: Mapping[str, str] = field(default_factory=dict)  # "kind/id" -> the other owner whose it is
    sums: Mapping[str, str] = field(default_factory=dict)  # "kind/id" -> keyed hash of what cesync applied
    sum_key: bytes = b""  # the key of those hashes (b"": records are not sealed)
    ignored: tuple[str, ...] = ()  # records ignored, each with why
    key_from: str = ""  # where the record key came from ("": records are not sealed)
    # "kind/id" -> (file, the owner it names) of each {ref: ..., owner: ...} of the repo
    declared: Mapping[str, tuple[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class PlanInput:
    """Everything the chain needs, read before it runs. Only env, parent, desired and remote are
    required: a caller with no record, clock or key gets a plan without drift, time or seal.

    desired: the repo's resources (wire bodies); remote: the app as read.
    app_body: what to create the app with when neither the repo (app.yaml) nor remote has it.
    targets: "kind/id" or ids the plan is limited to (--target); None: everything.
    sensitive: per (kind, id), the body paths that hold sensitive values (masked once, by the
    masking pass; the digest and body hashes cover them unmasked, keyed with key).
    owned: "kind/id" of what cesync owns (the applied record); None: every remote resource
    counts as owned (callers that keep no record).
    base: the record's snapshot per (kind, id); a change whose remote differs from it is drift.
    authors: per resource name, (author, time) of its newest change since the record (changelogs).
    """

    env: str
    parent: str
    desired: Sequence[Resource]
    remote: Sequence[Resource]
    prune: bool = False
    prune_unmanaged: bool = False
    targets: frozenset[str] | set[str] | None = None
    sensitive: Mapping[tuple[str, str], Sequence[Path_]] | None = None
    app_body: dict[str, Any] | None = None
    resend_input_only: bool = False
    owned: frozenset[str] | None = None
    base: Mapping[tuple[str, str], dict[str, Any]] | None = None
    record: str = ""  # the applied record (app version) base came from
    authors: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    key: bytes = b""
    created_at: str = ""  # the clock, read by the pipeline
    safety: SafetyLimits | None = None  # None: the guard is not asked (a saved plan's fresh copy)
    seal: SealInput | None = None  # None: the plan is not sealed (a plan nobody saves)
    destroy: bool = False  # a tear-down: planned against nothing desired
    records: RecordsInput | None = None  # None: no records were read (a plan of no environment's app)
    policy_rules: Sequence[CompiledRule] = ()  # the repo's policies, compiled (cesync.core.policy)
    labels: Sequence[str] = ()  # plan --label: what reviewers said of the change (policies read them)
    ignore: Mapping[tuple[str, str], Sequence[str]] = field(default_factory=dict)  # ignoreChanges (passes.ignore)
    tool_tests: Mapping[str, Sequence[str]] = field(default_factory=dict)  # test id -> "tool/id" it runs (passes.affected)
    compared: Compared | None = None  # pairs found equal before: not diffed again (passes.compare)
    mapper: Mapper = in_turn  # how the diffs of many pairs are made (passes.compare)

    @cached_property
    def remote_by(self) -> Mapping[tuple[str, str], Resource]:
        """remote by (kind, id), made once for the passes that look resources up in it."""
        return {r.key: r for r in self.remote}

    def wanted(self, kind_name: str, rid: str) -> bool:
        """Whether --target leaves this resource in the plan."""
        return not self.targets or rid in self.targets or f"{kind_name}/{rid}" in self.targets

    def paths(self, key: tuple[str, str]) -> list[Path_]:
        """The sensitive paths of one resource ([] when it has none)."""
        return list((self.sensitive or {}).get(key) or ())


Pass = Callable[[Plan, PlanInput], Plan]
