"""The CES resource model: pydantic classes named and shaped like the REST JSON."""

from .base import Behavior, FieldSpec, Kind, ProtoModel, specs
from .evaluations import Evaluation, EvaluationDataset, EvaluationExpectation, ScheduledEvaluationRun
from .messages import TOOL_TYPES, TOOLSET_TYPES, Agent, App, AppVersion, Deployment, Example, Guardrail, Schema, Tool, Toolset

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
