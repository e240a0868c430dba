"""The CES resource model: pydantic classes named and shaped like the REST JSON.

The evaluation kinds' models (v1beta, cesync.models.evaluations) load on first use: building
their classes costs about half as much again as every other kind's, and most repos and
commands never meet an evaluation.
"""

from typing import TYPE_CHECKING, Any

from .base import Behavior, FieldSpec, Kind, ProtoModel, specs
from .messages import TOOL_TYPES, TOOLSET_TYPES, Agent, App, AppVersion, Deployment, Example, Guardrail, Schema, Tool, Toolset

if TYPE_CHECKING:
    from .evaluations import Evaluation, EvaluationDataset, EvaluationExpectation, ScheduledEvaluationRun

_LAZY = frozenset({"Evaluation", "EvaluationDataset", "EvaluationExpectation", "ScheduledEvaluationRun"})


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import evaluations

        return getattr(evaluations, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "TOOLSET_TYPES",
    "TOOL_TYPES",
    "Agent",
    "App",
    "AppVersion",
    "Behavior",
    "Deployment",
    "Evaluation",
    "EvaluationDataset",
    "EvaluationExpectation",
    "Example",
    "FieldSpec",
    "Guardrail",
    "Kind",
    "ProtoModel",
    "ScheduledEvaluationRun",
    "Schema",
    "Tool",
    "Toolset",
    "specs",
]
