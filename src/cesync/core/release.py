"""Releases as code: how a new app version reaches a deployment, step by step (pure).

``releases/<deployment>.yaml`` says the steps of traffic, how long each holds and the gate:

    steps:
      - {traffic: 10, hold: 10m}
      - {traffic: 50, hold: 30m}
      - {traffic: 100}
    gate:
      tags: [refunds]       # the repo's evaluations with these tags (all without)
      minPassRate: 1.0

Where a release stands is read from the deployment alone (no local state): its
``experimentConfig.versionRelease.trafficAllocations`` hold two allocations cesync names
(``PREVIOUS_ID``, ``TARGET_ID``), the version served before and the one released, with the
released one's share on a step of the file. A split of any other shape was made by someone
else, and a release refuses to move it. The deployment's ``updateTime`` is when its step
began: a resumed release holds only what is left of that step.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "PREVIOUS_ID",
    "TARGET_ID",
    "Gate",
    "Position",
    "ReleaseSpec",
    "Step",
    "StepPlan",
    "finish_body",
    "hold_seconds",
    "position",
    "rollback_body",
    "schedule",
    "step_body",
]

PREVIOUS_ID = "cesync-previous"  # the allocation of the version served before the release
TARGET_ID = "cesync-release"  # the allocation of the version being released
MASK = ["appVersion", "experimentConfig"]
_HOLD = re.compile(r"(\d+(?:\.\d+)?)(s|m|h)")
_UNIT = {"s": 1, "m": 60, "h": 3600}
MAX_HOLD = 7 * 24 * 3600.0


def hold_seconds(text: str) -> float:
    """'90s', '10m', '1.5h', '1h30m' -> seconds; ValueError for anything else."""
    parts = _HOLD.findall(text)
    if not text or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"hold {text!r}: write a duration such as 30s, 10m, 1h or 1h30m")
    return sum(float(n) * _UNIT[u] for n, u in parts)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Step(_Strict):
    traffic: int = Field(ge=1, le=100, description="The released version's share of the deployment's traffic, in percent.")
    hold: str = Field("0s", description="How long the step holds before its gate runs (30s, 10m, 1h).")

    @field_validator("hold")
    @classmethod
    def _hold(cls, value: str) -> str:
        if hold_seconds(value) > MAX_HOLD:
            raise ValueError(f"hold {value!r}: at most a week")
        return value


class Gate(_Strict):
    tags: list[str] = Field(default_factory=list, description="Run the repo's evaluations with any of these tags (all without).")
    minPassRate: float = Field(1.0, ge=0, le=1, description="An evaluation passes when this share of its runs pass.")
    runs: int = Field(1, ge=1, le=100, description="Runs of each evaluation per gate.")


class ReleaseSpec(_Strict):
    steps: list[Step] = Field(min_length=1, max_length=20)
    gate: Gate = Field(default_factory=Gate)

    @field_validator("steps")
    @classmethod
    def _rising_to_100(cls, steps: list[Step]) -> list[Step]:
        shares = [s.traffic for s in steps]
        if any(b <= a for a, b in itertools.pairwise(shares)):
            raise ValueError(f"traffic must rise from step to step ({', '.join(map(str, shares))})")
        if shares[-1] != 100:
            raise ValueError(f"the last step gives the new version all traffic (traffic: 100), not {shares[-1]}")
        return steps


Stage = Literal["fresh", "running", "done", "foreign"]


@dataclass(frozen=True)
class Position:
    """Where a deployment stands in the release of target."""

    stage: Stage
    target: str
    previous: str = ""  # the version served before the release (fresh, running)
    step: int = -1  # running: the index of the step the deployment is on
    share: int = 0  # running: the target's share; foreign: what it has
    why: str = ""  # foreign: what is not cesync's


def _allocations(deployment: dict[str, Any]) -> list[dict[str, Any]]:
    release = (deployment.get("experimentConfig") or {}).get("versionRelease") or {}
    found = release.get("trafficAllocations") or []
    return [a for a in found if isinstance(a, dict)]


def position(deployment: dict[str, Any], target: str, spec: ReleaseSpec, draft: str) -> Position:
    """Where the release of target stands, read from the deployment (see the module docstring)."""
    allocations = _allocations(deployment)
    given = [a for a in allocations if int(a.get("trafficPercentage") or 0) > 0]
    if not allocations or (len(given) == 1 and int(given[0].get("trafficPercentage") or 0) == 100 and len(allocations) == 1):
        served = str((given[0].get("appVersion") if given else None) or deployment.get("appVersion") or draft)
        if served == target:
            return Position("done", target, previous=served)
        return Position("fresh", target, previous=served)
    by_id = {str(a.get("id", "")): a for a in allocations}
    if set(by_id) != {PREVIOUS_ID, TARGET_ID} or len(allocations) != 2:
        ids = ", ".join(f"{a.get('id') or '(no id)'} {a.get('trafficPercentage', 0)}%" for a in allocations)
        return Position("foreign", target, why=f"its traffic split ({ids}) was not made by cesync release")
    ours, before = by_id[TARGET_ID], by_id[PREVIOUS_ID]
    share = int(ours.get("trafficPercentage") or 0)
    if str(ours.get("appVersion", "")) != target:
        return Position("foreign", target, share=share, why=f"it is releasing {ours.get('appVersion')}, not {target}")
    if share + int(before.get("trafficPercentage") or 0) != 100:
        return Position("foreign", target, share=share, why="the shares of its split do not add up to 100")
    steps = [s.traffic for s in spec.steps]
    if share not in steps:
        return Position(
            "foreign",
            target,
            share=share,
            why=f"{target} has {share}% of its traffic, which no step gives ({steps}): moved by hand",
        )
    return Position("running", target, previous=str(before.get("appVersion", "")), step=steps.index(share), share=share)


@dataclass(frozen=True)
class StepPlan:
    """One step as a plan: what traffic moves where, how long it holds, then the gate."""

    index: int
    of: int
    previous: str
    target: str
    share_before: int  # the target's share before the step
    share: int  # ... and after
    hold: float  # seconds
    done: bool = False  # the deployment is already on this step (a resumed release)

    def public(self) -> dict[str, Any]:
        return {
            "step": self.index + 1,
            "of": self.of,
            "traffic": {
                self.previous: {"before": 100 - self.share_before, "after": 100 - self.share},
                self.target: {"before": self.share_before, "after": self.share},
            },
            "holdSeconds": self.hold,
            "alreadyThere": self.done,
        }


def schedule(at: Position, spec: ReleaseSpec) -> list[StepPlan]:
    """The steps still to take (the one the deployment is on first, marked done, when resuming)."""
    if at.stage not in ("fresh", "running"):
        return []
    first = max(at.step, 0)
    plans = []
    for i in range(first, len(spec.steps)):
        before = 0 if i == 0 else spec.steps[i - 1].traffic
        already = at.stage == "running" and i == at.step
        plans.append(
            StepPlan(
                i,
                len(spec.steps),
                at.previous,
                at.target,
                before,
                spec.steps[i].traffic,
                hold_seconds(spec.steps[i].hold),
                already,
            )
        )
    return plans


def step_body(previous: str, target: str, share: int) -> tuple[dict[str, Any], list[str]]:
    """The PATCH of one step: the two allocations cesync names, the deployment's appVersion kept."""
    body = {
        "experimentConfig": {
            "versionRelease": {
                "state": "RUNNING",
                "trafficAllocations": [
                    {"id": PREVIOUS_ID, "appVersion": previous, "trafficPercentage": 100 - share},
                    {"id": TARGET_ID, "appVersion": target, "trafficPercentage": share},
                ],
            }
        }
    }
    return body, ["experimentConfig"]


def finish_body(target: str) -> tuple[dict[str, Any], list[str]]:
    """The target serves alone: appVersion set, the split gone (experimentConfig in the mask, absent)."""
    return {"appVersion": target}, list(MASK)


def rollback_body(previous: str) -> tuple[dict[str, Any], list[str]]:
    """The version served before the release serves alone again."""
    return {"appVersion": previous}, list(MASK)
