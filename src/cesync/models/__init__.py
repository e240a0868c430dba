"""The CES resource model: pydantic classes named and shaped like the REST JSON.

Every kind's model loads on first use (cesync.models.messages says where each is made): a
command builds the classes of the kinds it meets, so validate of a repo of tools never builds
an agent's or the app's. The evaluation kinds' (v1beta, cesync.models.evaluations) come the
same way: building their classes costs about half as much again as every other kind's, and
most repos and commands never meet an evaluation.
"""

from typing import TYPE_CHECKING, Any

from .base import Behavior, FieldSpec, Kind, ProtoModel, specs
from .messages import TOOL_TYPES, TOOLSET_TYPES

if TYPE_CHECKING:
    from .evaluations import Evaluation, EvaluationDataset, EvaluationExpectation, ScheduledEvaluationRun
    from .messages import Agent, App, AppVersion, Deployment, Example, Guardrail, Schema, Tool, Toolset

_EVALUATIONS = frozenset({"Evaluation", "EvaluationDataset", "EvaluationExpectation", "ScheduledEvaluationRun"})
_MESSAGES = frozenset({"Agent", "App", "AppVersion", "Deployment", "Example", "Guardrail", "Schema", "Tool", "Toolset"})


def __getattr__(name: str) -> Any:
    if name in _EVALUATIONS:
        from . import evaluations

        return getattr(evaluations, name)
    if name in _MESSAGES:
        from . import messages

        value = getattr(messages, name)
        globals()[name] = value  # the next use (kind.model, every resource's) finds it here
        return value
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
