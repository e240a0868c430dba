"""Building the plan: a chain of pure passes over plain data (``cesync.core.passes``).

``start`` makes an empty plan of what the pipeline read (``PlanInput``); each pass of
``PASSES`` takes the plan and that input and returns the next plan::

    start -> compare -> ignore -> targets -> carry -> ownership -> other_owners -> lock -> masking
          -> renames -> order -> drift -> sealed_drift -> record_notes -> safety -> impact -> affected -> policy -> seal

The pipeline reads everything first (the app, the applied record, the changelogs, the clock,
the keys); nothing here reads or writes anything. A new rule of what a plan may hold is a new
pass, put in ``PASSES`` where it needs the plan to be (docs/architecture.md)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ..api.resource import Resource
from .passes import Pass, PlanInput
from .passes.affected import affected
from .passes.carry import carry
from .passes.compare import compare
from .passes.drift import drift
from .passes.ignore import ignore
from .passes.impact import impact
from .passes.lock import lock
from .passes.masking import masking
from .passes.order import order
from .passes.ownership import ownership
from .passes.policy import policy
from .passes.records import other_owners, record_notes, sealed_drift
from .passes.renames import renames
from .passes.safety import safety
from .passes.seal import seal
from .passes.targets import targets
from .plan import Plan
from .planseal import desired_digest
from .validation import findings

__all__ = ["PASSES", "build_plan", "run_passes", "start"]

log = logging.getLogger(__name__)

PASSES: tuple[Pass, ...] = (
    compare,
    ignore,
    targets,
    carry,
    ownership,
    other_owners,
    lock,
    masking,
    renames,
    order,
    drift,
    sealed_drift,
    record_notes,
    safety,
    impact,
    affected,
    policy,
    seal,
)


def start(given: PlanInput) -> Plan:
    """The plan before any pass: what it is of, and what the app and the repo say as read."""
    return Plan(
        environment=given.env,
        app=given.parent,
        digest=desired_digest(given.env, given.parent, list(given.desired), given.key),
        managed=len(given.desired),
        resend_input_only=given.resend_input_only,
        validation=findings(given.parent, list(given.remote)),
        created_at=given.created_at,
        record=given.record,
        destroy=given.destroy,
    )


def run_passes(given: PlanInput, passes: Sequence[Pass] | None = None) -> Plan:
    """The plan of given, through passes (default: PASSES, as it is when called)."""
    plan = start(given)
    for step in PASSES if passes is None else passes:
        plan = step(plan, given)
    log.debug("plan: %s: %d change(s), %d unmanaged", given.env, len(plan.changes), len(plan.unmanaged))
    return plan


def build_plan(env: str, parent: str, desired: list[Resource], remote: list[Resource], **options: Any) -> Plan:
    """The plan of desired against remote; options are PlanInput's (prune, targets, sensitive, ...)."""
    return run_passes(PlanInput(env, parent, desired, remote, **options))
