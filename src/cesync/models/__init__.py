"""The CES resource model: pydantic classes named and shaped like the REST JSON."""

from .base import Behavior, FieldSpec, Kind, ProtoModel, specs
from .messages import TOOL_TYPES, TOOLSET_TYPES, Agent, App, AppVersion, Deployment, Example, Guardrail, Schema, Tool, Toolset

__all__ = [
    "TOOLSET_TYPES",
    "TOOL_TYPES",
    "Agent",
    "App",
    "AppVersion",
    "Behavior",
    "Deployment",
    "Example",
    "FieldSpec",
    "Guardrail",
    "Kind",
    "ProtoModel",
    "Schema",
    "Tool",
    "Toolset",
    "specs",
]
