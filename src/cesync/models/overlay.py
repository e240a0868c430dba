"""What the generated models know that the protos do not: limits and formats from the API pages.

The generator (``scripts/gen_api.py``) reads these tables; keys are proto field
full names (``package.Message.field``). Everything else comes from the
descriptor snapshot in :mod:`cesync.api.descriptors`.
"""

from __future__ import annotations

from typing import Any

P = "google.cloud.ces.v1."

# Resource-name fields: field -> (type alias emitted in the module, kind in base.RESOURCE_PATTERNS).
RESOURCE_FIELDS: dict[str, str] = {
    P + "ApiKeyConfig.api_key_secret_version": "secretVersion",
    P + "OAuthConfig.client_secret_version": "secretVersion",
    P + "ServiceAccountAuthConfig.service_account": "serviceAccount",
    P + "BearerTokenConfig.token": "contextVariable",
    P + "EndUserAuthConfig.Oauth2AuthCodeConfig.oauth_token": "contextVariable",
    P + "EndUserAuthConfig.Oauth2JwtBearerConfig.issuer": "contextVariable",
    P + "EndUserAuthConfig.Oauth2JwtBearerConfig.subject": "contextVariable",
    P + "EndUserAuthConfig.Oauth2JwtBearerConfig.client_key": "contextVariable",
    P + "ServiceDirectoryConfig.service": "service",
    P + "ConnectorTool.connection": "connection",
    P + "ConnectorToolset.connection": "connection",
    P + "DataStore.name": "dataStore",
    P + "DataStoreTool.EngineSource.engine": "engine",
    P + "FileSearchTool.file_corpus": "ragCorpus",
    P + "AgentTool.root_agent": "agent",
    P + "AgentTool.agent": "agent",
}
RESOURCE_ALIASES: dict[str, str] = {
    "connection": "ConnectionName",
    "dataStore": "DataStoreName",
    "engine": "EngineName",
    "agent": "AgentName",
    "secretVersion": "SecretVersion",
    "service": "ServiceName",
    "ragCorpus": "RagCorpusName",
    "contextVariable": "ContextVariable",
    "serviceAccount": "ServiceAccountEmail",
}

# Documented list limits.
MAX_ITEMS: dict[str, int] = {
    P + "GoogleSearchTool.context_urls": 20,
    P + "GoogleSearchTool.preferred_domains": 20,
    P + "GoogleSearchTool.exclude_domains": 2000,
}

# Documented numeric ranges: field -> (ge, le).
RANGES: dict[str, tuple[float, float]] = {
    P + "DataStoreTool.BoostSpec.ConditionBoostSpec.boost": (-1, 1),
    P + "DataStoreTool.GroundingConfig.grounding_level": (1, 5),
}

# Oneofs of which exactly one member must be set (the protos cannot say so).
REQUIRED_ONEOFS: set[str] = {P + "Tool.tool_type", P + "Toolset.toolset_type"}

# Fields the API reference pages (the seeds) document but neither the package nor the discovery
# document has yet, as a discovery document of those schemas' new properties: the generator merges
# it after the discovery document (cesync.api.discoverydoc.merge, source "seeds"), into v1 and v1beta.
_TARGET_APP = {
    "description": "Output only. The app the executed tool targeted; mirrors ToolCall.target_app.",
    "readOnly": True,
    "type": "string",
}
SEED_SCHEMAS: dict[str, Any] = {
    "revision": "000",  # /work/shared/seeds/000: the ToolResponse page (targetApp, "mirrors ToolCall.target_app")
    "schemas": {
        "ToolResponse": {"id": "ToolResponse", "properties": {"targetApp": _TARGET_APP}},
        "ToolCall": {
            "id": "ToolCall",
            "properties": {"targetApp": {**_TARGET_APP, "description": "Output only. The app the tool call targets."}},
        },
    },
}

# Fields a model has that its message lacks (the description gives every field now): none.
EXTRA_FIELDS: dict[str, list[dict[str, Any]]] = {}

# Module-level tuples the rest of cesync imports: name -> oneof full name.
ONEOF_TUPLES: dict[str, str] = {"TOOL_TYPES": P + "Tool.tool_type", "TOOLSET_TYPES": P + "Toolset.toolset_type"}

# The resources cesync manages (api/kinds.py): these and every message they hold are made in
# cesync.models.msg_* (a kind's own in its module, those several kinds hold in msg_shared), each
# module imported on first use of one of its names through cesync.models.messages; the other
# messages of the API (requests, responses, sessions...) are in cesync.models.other, imported the
# same way (creating 110 pydantic classes no command uses was a quarter of importing the models).
RESOURCE_MESSAGES: tuple[str, ...] = tuple(
    P + name for name in ("App", "Agent", "Tool", "Toolset", "Guardrail", "Example", "Deployment", "AppVersion")
)
# The kinds only v1beta has (the evaluations): generated into cesync.models.evaluations.
BETA_RESOURCE_MESSAGES: tuple[str, ...] = tuple(
    "google.cloud.ces.v1beta." + name
    for name in ("Evaluation", "EvaluationDataset", "EvaluationExpectation", "ScheduledEvaluationRun")
)
