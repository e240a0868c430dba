"""A discovery document newer than the one cesync ships, made from the installed one for the tests of
cesync.repo.apidescription: what a later revision of CES might add, change and drop."""

from __future__ import annotations

import copy
import importlib.resources
import json
from typing import Any

REVISION = "29990101"


def installed(version: str = "v1") -> dict[str, Any]:
    path = importlib.resources.files("googleapiclient") / "discovery_cache" / "documents" / f"ces.{version}.json"
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


def newer(drop_temperature: bool = False) -> dict[str, Any]:
    """Revision 29990101: ModelSettings.reasoningBudget (int32), thinkingLevel MAXIMAL, Guardrail.escalation
    (a message no revision had: target, priority, ticket output only), Tool.lastRunTime (output only); optionally without
    ModelSettings.temperature."""
    doc = copy.deepcopy(installed("v1"))
    doc["revision"] = REVISION
    schemas = doc["schemas"]
    settings = schemas["ModelSettings"]["properties"]
    settings["reasoningBudget"] = {
        "description": "Optional. Tokens the model may think with.",
        "format": "int32",
        "type": "integer",
    }
    settings["thinkingLevel"]["enum"].append("MAXIMAL")
    if drop_temperature:
        del settings["temperature"]
    schemas["GuardrailEscalation"] = {
        "id": "GuardrailEscalation",
        "description": "Where a guardrail escalates to.",
        "type": "object",
        "properties": {
            "target": {"description": "Required. The queue.", "type": "string"},
            "priority": {
                "description": "Optional. How urgent.",
                "enum": ["PRIORITY_UNSPECIFIED", "LOW", "HIGH"],
                "type": "string",
            },
            "ticket": {"description": "Output only. The ticket it opened.", "readOnly": True, "type": "string"},
        },
    }
    schemas["Guardrail"]["properties"]["escalation"] = {"$ref": "GuardrailEscalation", "description": "Optional. Escalation."}
    schemas["Tool"]["properties"]["lastRunTime"] = {
        "description": "Output only. When the tool last ran.",
        "format": "google-datetime",
        "readOnly": True,
        "type": "string",
    }
    return doc
