"""The collections an app holds, and the references between its resources.

A reference is any string field holding the full name of a resource of the same
app (``Agent.tools``, ``Agent.toolsets[].toolset``, ``App.rootAgent``,
``Deployment.appVersion``, ...): the emulator finds them by walking the stored
JSON, so every field the API has, or gains, that names a resource is covered
without a table to keep.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..api import descriptors as api

__all__ = [
    "COLLECTIONS",
    "REFERENCE_FIELDS",
    "REFERRERS",
    "Collection",
    "drop_references",
    "reference_values",
    "references",
]


@dataclass(frozen=True)
class Collection:
    """One collection under an app: its path segment, message and request names."""

    name: str  # path segment: tools, versions, ...
    message: str  # short message name in the API package
    singular: str  # JSON name of the resource in requests: tool, appVersion, ...
    oneof: str | None = None  # a oneof the resource must set (its type)
    unique_display_name: bool = False
    package: str = api.PACKAGE  # the API package of its message
    versions: tuple[str, ...] = ("v1", "v1beta")  # the REST surfaces that serve it

    @property
    def full_message(self) -> str:
        return f"{self.package}.{self.message}"

    @property
    def id_param(self) -> str:
        return f"{self.singular}Id"

    @property
    def words(self) -> str:
        """How messages name one of them: 'tool', 'app version'."""
        return re.sub(r"([A-Z])", lambda m: " " + m.group(1).lower(), self.singular)


COLLECTIONS: dict[str, Collection] = {
    c.name: c
    for c in (
        Collection("tools", "Tool", "tool", "tool_type"),
        Collection("toolsets", "Toolset", "toolset", "toolset_type", unique_display_name=True),
        Collection("agents", "Agent", "agent", unique_display_name=True),
        Collection("guardrails", "Guardrail", "guardrail", "guardrail_type", unique_display_name=True),
        Collection("examples", "Example", "example", unique_display_name=True),
        Collection("deployments", "Deployment", "deployment"),
        Collection("versions", "AppVersion", "appVersion"),
        # Only v1beta has these (google-cloud-ces ces_v1beta EvaluationService; ces_v1 has no such
        # service). Display names: "Unique within an App" (Evaluation.display_name,
        # EvaluationDataset.display_name), "Must be unique within the app" (EvaluationExpectation);
        # ScheduledEvaluationRun.display_name says nothing of uniqueness.
        *(
            Collection(name, message, singular, package=api.BETA_PACKAGE, versions=("v1beta",), unique_display_name=unique)
            for name, message, singular, unique in (
                ("evaluationExpectations", "EvaluationExpectation", "evaluationExpectation", True),
                ("evaluations", "Evaluation", "evaluation", True),
                ("evaluationDatasets", "EvaluationDataset", "evaluationDataset", True),
                ("scheduledEvaluationRuns", "ScheduledEvaluationRun", "scheduledEvaluationRun", False),
            )
        ),
    )
}
APP = Collection("apps", "App", "app")
# Whose fields may name other resources of the app: everything but the versions
# (a version's snapshot is a record, not a user of what it names).
# An evaluation dataset is one: DeleteEvaluationRequest.force (ces_v1beta): "If force = false, the
# deletion will fail if any datasets still reference the evaluation. If force = true, all existing
# references from datasets will be removed". An evaluation is not: deleting what it names is not
# refused (DeleteToolRequest.force names agents/examples), it makes the evaluation invalid
# (Evaluation.invalid: "referencing a tool, toolset, or agent that has since been deleted"; see
# evaluation_kinds.py). What a scheduled run names: the sources are silent; it does not hold a delete.
REFERRERS = ("tools", "toolsets", "agents", "guardrails", "examples", "deployments", "evaluationDatasets")
# A toolset's own tools (``{toolset}/tools/{id}``) count as references to the toolset.
_NAME = re.compile(r"^(projects/[^/]+/locations/[^/]+/apps/[^/]+)/(" + "|".join(COLLECTIONS) + r")/([^/]+)(/tools/[^/]+)?\Z")

Path = tuple[str | int, ...]

# The fields whose proto declaration carries ``google.api.resource_reference`` to a resource of
# the app (googleapis google/cloud/ces/v1/*.proto: agent.proto Agent.tools -> Tool, child_agents
# -> Agent, guardrails -> Guardrail, AgentToolset.toolset -> Toolset; agent_transfers.proto
# TransferRule.child_agent -> Agent; app.proto App.root_agent -> Agent, guardrails -> Guardrail;
# example.proto Example.entry_agent, AgentTransfer.target_agent -> Agent, ToolCall.tool,
# ToolResponse.tool -> Tool; agent_tool.proto AgentTool.root_agent -> Agent; deployment.proto
# Deployment.app_version -> AppVersion). The snapshot in api/ces_v1.binpb does not keep field
# options (google-cloud-ces's proto-plus descriptors drop them), hence this table; the docstrings'
# "Format: .../apps/{app}/<collection>/..." lines agree with it. The fields not in those protos
# (ToolsetTool.toolset, TransferAgent.agent, WidgetTool's sourceToolName) follow their docstrings.
# Whether CES checks at write time that such a name exists is not documented (the protos are
# silent); the emulator does, so a name that would dangle is found by the first apply, except
# where Google's Terraform samples name something that does not exist (api.behaviour's
# NAME_UNCHECKED rules, each citing its sample: integrity.py asks them).
REFERENCE_FIELDS: dict[str, dict[str, str]] = {
    "apps": {"rootAgent": "agents", "guardrails": "guardrails"},
    "agents": {
        "tools": "tools",
        "childAgents": "agents",
        "guardrails": "guardrails",
        "toolsets.toolset": "toolsets",
        "transferRules.childAgent": "agents",
    },
    "tools": {"agentTool.rootAgent": "agents", "agentTool.agent": "agents", "widgetTool.dataMapping.sourceToolName": "tools"},
    "guardrails": {"action.transferAgent.agent": "agents"},
    "examples": {
        "entryAgent": "agents",
        "messages.chunks.toolCall.tool": "tools",
        "messages.chunks.toolResponse.tool": "tools",
        "messages.chunks.toolCall.toolsetTool.toolset": "toolsets",
        "messages.chunks.toolResponse.toolsetTool.toolset": "toolsets",
        "messages.chunks.agentTransfer.targetAgent": "agents",
    },
    "deployments": {"appVersion": "versions"},
    # ces_v1beta evaluation.py: the docstrings' "Format: .../apps/{app}/<collection>/{...}" (ToolCall.tool,
    # ToolResponse.tool, AgentTransfer.target_agent, Golden.evaluation_expectations,
    # EvaluationDataset.evaluations, RunEvaluationRequest.evaluations, .evaluation_dataset, .app_version).
    "evaluations": {
        **{
            f"{at}.{end}": target
            for at in (
                "golden.turns.steps.expectation.toolCall",
                "golden.turns.steps.expectation.toolResponse",
                "golden.turns.steps.expectation.mockToolResponse",
                "golden.turns.steps.expectation.agentResponse.chunks.toolCall",
                "golden.turns.steps.expectation.agentResponse.chunks.toolResponse",
                "golden.turns.steps.userInput.toolResponses.toolResponses",
                "scenario.scenarioExpectations.toolExpectation.expectedToolCall",
                "scenario.scenarioExpectations.toolExpectation.mockToolResponse",
                "scenario.scenarioExpectations.agentResponse.chunks.toolCall",
                "scenario.scenarioExpectations.agentResponse.chunks.toolResponse",
            )
            for end, target in (("tool", "tools"), ("toolsetTool.toolset", "toolsets"))
        },
        "golden.turns.steps.agentTransfer.targetAgent": "agents",
        "golden.turns.steps.expectation.agentTransfer.targetAgent": "agents",
        "golden.turns.steps.expectation.agentResponse.chunks.agentTransfer.targetAgent": "agents",
        "scenario.scenarioExpectations.agentResponse.chunks.agentTransfer.targetAgent": "agents",
        "golden.evaluationExpectations": "evaluationExpectations",
        "scenario.evaluationExpectations": "evaluationExpectations",
    },
    "evaluationDatasets": {"evaluations": "evaluations"},
    "scheduledEvaluationRuns": {
        "request.evaluations": "evaluations",
        "request.evaluationDataset": "evaluationDatasets",
        "request.appVersion": "versions",
    },
}


def reference_values(collection: str, data: Any) -> Iterator[tuple[Path, str, str]]:
    """(path, value, collection it must name) of every string in a resource-reference field."""
    fields = REFERENCE_FIELDS.get(collection, {})
    stack: list[tuple[Path, str, Any]] = [((), "", data)]
    while stack:
        path, dotted, item = stack.pop()
        if isinstance(item, dict):
            stack.extend(((*path, k), f"{dotted}.{k}" if dotted else k, v) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend(((*path, i), dotted, v) for i, v in enumerate(item))
        elif isinstance(item, str) and dotted in fields:
            yield path, item, fields[dotted]


def references(data: Any, app: str, path: Path = ()) -> Iterator[tuple[Path, str, str, str]]:
    """(path, name, collection, id) of every string in ``data`` naming a resource of ``app``."""
    if isinstance(data, dict):
        for key, value in data.items():
            if key not in ("name", "snapshot"):
                yield from references(value, app, (*path, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from references(value, app, (*path, i))
    elif isinstance(data, str):
        match = _NAME.match(data)
        if match and match.group(1) == app and match.group(3) != "-" and (match.group(4) is None or match.group(2) == "toolsets"):
            yield path, data, match.group(2), match.group(3)


def drop_references(data: dict[str, Any], target: str) -> dict[str, Any]:
    """``data`` without its references to ``target``.

    A name in a list leaves the list; a name that identifies a list entry (an
    agent's ``toolsets[].toolset``, ``transferRules[].childAgent``) takes the
    entry with it; any other field naming it is cleared.
    """
    return _drop(data, target)  # type: ignore[no-any-return]


def _names(value: Any, target: str) -> bool:
    return isinstance(value, str) and (value == target or value.startswith(f"{target}/tools/"))


def _drop(value: Any, target: str) -> Any:
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            kept = _drop(v, target)
            if not _names(v, target) and not (kept == [] and v != []):  # proto3 JSON omits an emptied list
                out[k] = kept
        return out
    if isinstance(value, list):
        kept = []
        for item in value:
            if _names(item, target) or (isinstance(item, dict) and any(_names(v, target) for v in item.values())):
                continue
            kept.append(_drop(item, target))
        return kept
    return value
