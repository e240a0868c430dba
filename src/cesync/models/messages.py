"""Every message reachable from the CES v1 ``Tool`` and ``Toolset`` resources.

Attribute names are the REST JSON names. Behaviour markers follow the API
reference (seed 001 and the ``google-cloud-ces`` docstrings): R = required,
O = optional, OUT = output only, ID = identifier.
"""

from __future__ import annotations

from typing import Annotated, Literal

from .base import (
    Behavior,
    Bytes,
    Double,
    Duration,
    Float32,
    Int64,
    ProtoEnum,
    ProtoModel,
    Struct,
    Timestamp,
    Value,
    field_,
    resolve_forward_refs,
    resource,
)

R, OUT, ID = Behavior.REQUIRED, Behavior.OUTPUT_ONLY, Behavior.IDENTIFIER

ConnectionName = Annotated[str, resource("connection")]
DataStoreName = Annotated[str, resource("dataStore")]
EngineName = Annotated[str, resource("engine")]
AgentName = Annotated[str, resource("agent")]
SecretVersion = Annotated[str, resource("secretVersion")]
ServiceName = Annotated[str, resource("service")]
RagCorpusName = Annotated[str, resource("ragCorpus")]
ContextVariable = Annotated[str, resource("contextVariable")]
ServiceAccountEmail = Annotated[str, resource("serviceAccount")]

ExecutionType = Annotated[Literal["EXECUTION_TYPE_UNSPECIFIED", "SYNCHRONOUS", "ASYNCHRONOUS"], ProtoEnum()]
SchemaType = Annotated[
    Literal["TYPE_UNSPECIFIED", "STRING", "INTEGER", "NUMBER", "BOOLEAN", "OBJECT", "ARRAY"],
    ProtoEnum(),
]
RequestLocation = Annotated[Literal["REQUEST_LOCATION_UNSPECIFIED", "HEADER", "QUERY_STRING"], ProtoEnum()]
OauthGrantType = Annotated[Literal["OAUTH_GRANT_TYPE_UNSPECIFIED", "CLIENT_CREDENTIAL"], ProtoEnum()]
OperationType = Annotated[Literal["OPERATION_TYPE_UNSPECIFIED", "LIST", "GET", "CREATE", "UPDATE", "DELETE"], ProtoEnum()]
DataStoreType = Annotated[
    Literal["DATA_STORE_TYPE_UNSPECIFIED", "PUBLIC_WEB", "UNSTRUCTURED", "FAQ", "CONNECTOR"],
    ProtoEnum(),
]
DocumentProcessingMode = Annotated[Literal["DOCUMENT_PROCESSING_MODE_UNSPECIFIED", "DOCUMENTS", "CHUNKS"], ProtoEnum()]
AttributeType = Annotated[Literal["ATTRIBUTE_TYPE_UNSPECIFIED", "NUMERICAL", "FRESHNESS"], ProtoEnum()]
InterpolationType = Annotated[Literal["INTERPOLATION_TYPE_UNSPECIFIED", "LINEAR"], ProtoEnum()]
ModalityType = Annotated[Literal["MODALITY_TYPE_UNSPECIFIED", "TEXT", "AUDIO"], ProtoEnum()]
FilterParameterBehavior = Annotated[
    Literal["FILTER_PARAMETER_BEHAVIOR_UNSPECIFIED", "ALWAYS_INCLUDE", "NEVER_INCLUDE"],
    ProtoEnum({"FILTER_PARAMETER_BEHAVIOR_UNSPECIFIED": 0, "ALWAYS_INCLUDE": 2, "NEVER_INCLUDE": 3}),
]
McpToolState = Annotated[Literal["STATE_UNSPECIFIED", "ACTIVE", "INACTIVE", "STALE"], ProtoEnum()]
CorpusType = Annotated[Literal["CORPUS_TYPE_UNSPECIFIED", "USER_OWNED", "FULLY_MANAGED"], ProtoEnum()]
WidgetType = Annotated[
    Literal[
        "WIDGET_TYPE_UNSPECIFIED",
        "CUSTOM",
        "PRODUCT_CAROUSEL",
        "PRODUCT_DETAILS",
        "QUICK_ACTIONS",
        "PRODUCT_COMPARISON",
        "ADVANCED_PRODUCT_DETAILS",
        "SHORT_FORM",
        "OVERALL_SATISFACTION",
        "ORDER_SUMMARY",
        "APPOINTMENT_DETAILS",
        "APPOINTMENT_SCHEDULER",
        "CONTACT_FORM",
    ],
    ProtoEnum(),
]
DataMappingMode = Annotated[Literal["MODE_UNSPECIFIED", "FIELD_MAPPING", "PYTHON_SCRIPT"], ProtoEnum()]
TextResponseType = Annotated[Literal["TYPE_UNSPECIFIED", "NONE", "LLM_GENERATED", "STATIC"], ProtoEnum()]


# --- Schema (a recursive subset of OpenAPI 3.0) -------------------------------------------


class Schema(ProtoModel):
    type: SchemaType = field_(R, "The type of the data.")
    properties: dict[str, Schema] | None = field_(doc="Properties of an OBJECT.")
    required: list[str] | None = field_(doc="Required properties of an OBJECT.")
    description: str | None = field_()
    items: Schema | None = field_(doc="Schema of the elements of an ARRAY.")
    nullable: bool | None = field_()
    uniqueItems: bool | None = field_()
    prefixItems: list[Schema] | None = field_()
    additionalProperties: Schema | None = field_()
    anyOf: list[Schema] | None = field_()
    enum: list[str] | None = field_()
    default: Value = field_()
    ref: str | None = field_(doc="Reference to a definition in defs, e.g. #/defs/Pet.")
    defs: dict[str, Schema] | None = field_(doc="Definitions for ref (root schema only).")
    title: str | None = field_()
    minItems: Int64 | None = field_()
    maxItems: Int64 | None = field_()
    minimum: Double | None = field_(presence=True)
    maximum: Double | None = field_(presence=True)


# --- Authentication, TLS, Service Directory ----------------------------------------------


class ApiKeyConfig(ProtoModel):
    keyName: str = field_(R, "Name of the header or query parameter that carries the key.")
    apiKeySecretVersion: SecretVersion = field_(R, "Secret Manager version holding the key.")
    requestLocation: RequestLocation = field_(R)


class OAuthConfig(ProtoModel):
    oauthGrantType: OauthGrantType = field_(R)
    clientId: str = field_(R)
    clientSecretVersion: SecretVersion = field_(R)
    tokenEndpoint: str = field_(R)
    scopes: list[str] | None = field_()


class ServiceAgentIdTokenAuthConfig(ProtoModel):
    """Empty on purpose: its presence selects the CES service agent's ID token."""


class ServiceAccountAuthConfig(ProtoModel):
    serviceAccount: ServiceAccountEmail = field_(R)
    scopes: list[str] | None = field_()


class BearerTokenConfig(ProtoModel):
    token: ContextVariable = field_(R, "Must be $context.variables.<name>.")


class ApiAuthentication(ProtoModel):
    oneofs = {
        "auth_config": (
            (
                "apiKeyConfig",
                "oauthConfig",
                "serviceAgentIdTokenAuthConfig",
                "serviceAccountAuthConfig",
                "bearerTokenConfig",
            ),
            False,
        )
    }
    apiKeyConfig: ApiKeyConfig | None = field_()
    oauthConfig: OAuthConfig | None = field_()
    serviceAgentIdTokenAuthConfig: ServiceAgentIdTokenAuthConfig | None = field_()
    serviceAccountAuthConfig: ServiceAccountAuthConfig | None = field_()
    bearerTokenConfig: BearerTokenConfig | None = field_()


class Oauth2AuthCodeConfig(ProtoModel):
    oauthToken: ContextVariable = field_(R)


class Oauth2JwtBearerConfig(ProtoModel):
    issuer: ContextVariable = field_(R)
    subject: ContextVariable = field_(R)
    clientKey: ContextVariable = field_(R)


class EndUserAuthConfig(ProtoModel):
    oneofs = {"auth_config": (("oauth2AuthCodeConfig", "oauth2JwtBearerConfig"), False)}
    oauth2AuthCodeConfig: Oauth2AuthCodeConfig | None = field_()
    oauth2JwtBearerConfig: Oauth2JwtBearerConfig | None = field_()


class CaCert(ProtoModel):
    displayName: str = field_(R)
    cert: Bytes = field_(R, "DER or PEM certificate, base64 in JSON and YAML.")


class TlsConfig(ProtoModel):
    caCerts: list[CaCert] = field_(R)


class ServiceDirectoryConfig(ProtoModel):
    service: ServiceName = field_(R)


# --- The twelve tool types ----------------------------------------------------------------


class ClientFunction(ProtoModel):
    name: str = field_(R)
    description: str | None = field_()
    parameters: Schema | None = field_()
    response: Schema | None = field_()


class OpenApiTool(ProtoModel):
    openApiSchema: str = field_(R, "The OpenAPI document, JSON or YAML text.")
    name: str | None = field_()
    description: str | None = field_()
    apiAuthentication: ApiAuthentication | None = field_()
    tlsConfig: TlsConfig | None = field_()
    serviceDirectoryConfig: ServiceDirectoryConfig | None = field_()
    ignoreUnknownFields: bool | None = field_()
    url: str | None = field_(doc="Server URL that replaces $env_var in the schema.")


class PromptConfig(ProtoModel):
    textPrompt: str | None = field_()
    voicePrompt: str | None = field_()


class GoogleSearchTool(ProtoModel):
    name: str = field_(R)
    description: str | None = field_()
    contextUrls: list[str] | None = field_(max_items=20)
    preferredDomains: list[str] | None = field_(max_items=20)
    excludeDomains: list[str] | None = field_(max_items=2000)
    promptConfig: PromptConfig | None = field_()


class EntityOperation(ProtoModel):
    entityId: str = field_(R)
    operation: OperationType = field_(R)


class Action(ProtoModel):
    oneofs = {"action_spec": (("connectionActionId", "entityOperation"), False)}
    connectionActionId: str | None = field_()
    entityOperation: EntityOperation | None = field_()
    inputFields: list[str] | None = field_()
    outputFields: list[str] | None = field_()


class ConnectorTool(ProtoModel):
    connection: ConnectionName = field_(R)
    action: Action = field_(R)
    authConfig: EndUserAuthConfig | None = field_()
    name: str | None = field_()
    description: str | None = field_()


class ConnectorConfig(ProtoModel):
    collection: str | None = field_()
    collectionDisplayName: str | None = field_()
    dataSource: str | None = field_()


class DataStore(ProtoModel):
    name: DataStoreName = field_(R)
    type: DataStoreType | None = field_(OUT)
    documentProcessingMode: DocumentProcessingMode | None = field_(OUT)
    displayName: str | None = field_(OUT)
    createTime: Timestamp | None = field_(OUT)
    connectorConfig: ConnectorConfig | None = field_(OUT)


class DataStoreSource(ProtoModel):
    filter: str | None = field_()
    dataStore: DataStore | None = field_()


class EngineSource(ProtoModel):
    engine: EngineName = field_(R)
    dataStoreSources: list[DataStoreSource] | None = field_()
    filter: str | None = field_()


class ControlPoint(ProtoModel):
    attributeValue: str | None = field_()
    boostAmount: Float32 | None = field_()


class BoostControlSpec(ProtoModel):
    fieldName: str | None = field_()
    attributeType: AttributeType | None = field_()
    interpolationType: InterpolationType | None = field_()
    controlPoints: list[ControlPoint] | None = field_()


class ConditionBoostSpec(ProtoModel):
    condition: str = field_(R)
    boost: Float32 | None = field_(doc="Between -1 and 1.", ge=-1, le=1)
    boostControlSpec: BoostControlSpec | None = field_()


class BoostSpec(ProtoModel):
    conditionBoostSpecs: list[ConditionBoostSpec] = field_(R)


class BoostSpecs(ProtoModel):
    dataStores: list[str] = field_(R)
    spec: list[BoostSpec] = field_(R)


class ModelSettings(ProtoModel):
    model: str | None = field_()
    temperature: Double | None = field_(presence=True)


class RewriterConfig(ProtoModel):
    modelSettings: ModelSettings = field_(R)
    prompt: str | None = field_()
    disabled: bool | None = field_()


class SummarizationConfig(ProtoModel):
    modelSettings: ModelSettings | None = field_()
    prompt: str | None = field_()
    disabled: bool | None = field_()


class GroundingConfig(ProtoModel):
    groundingLevel: Float32 | None = field_(doc="From 1 to 5.", ge=1, le=5)
    disabled: bool | None = field_()


class ModalityConfig(ProtoModel):
    modalityType: ModalityType = field_(R)
    rewriterConfig: RewriterConfig | None = field_()
    summarizationConfig: SummarizationConfig | None = field_()
    groundingConfig: GroundingConfig | None = field_()


class DataStoreTool(ProtoModel):
    oneofs = {"search_source": (("dataStoreSource", "engineSource"), False)}
    dataStoreSource: DataStoreSource | None = field_()
    engineSource: EngineSource | None = field_()
    name: str = field_(R)
    description: str | None = field_()
    boostSpecs: list[BoostSpecs] | None = field_()
    modalityConfigs: list[ModalityConfig] | None = field_()
    filterParameterBehavior: FilterParameterBehavior | None = field_()


class PythonFunction(ProtoModel):
    name: str | None = field_(doc="Defaults to the first function in the code.")
    pythonCode: str | None = field_()
    description: str | None = field_(OUT, "Parsed from the function's docstring.")
    serviceDirectoryConfig: ServiceDirectoryConfig | None = field_()


class McpTool(ProtoModel):
    name: str = field_(R)
    nameOverride: str | None = field_()
    description: str | None = field_()
    inputSchema: Schema | None = field_()
    outputSchema: Schema | None = field_()
    serverAddress: str = field_(R)
    apiAuthentication: ApiAuthentication | None = field_()
    tlsConfig: TlsConfig | None = field_()
    serviceDirectoryConfig: ServiceDirectoryConfig | None = field_()
    customHeaders: dict[str, str] | None = field_()
    state: McpToolState | None = field_(OUT)


class FileSearchTool(ProtoModel):
    corpusType: CorpusType | None = field_(doc="Defaults to FULLY_MANAGED.")
    name: str = field_(R)
    description: str | None = field_()
    fileCorpus: RagCorpusName | None = field_()


class SystemTool(ProtoModel):
    name: str = field_(R)
    description: str | None = field_(OUT)


class AgentTool(ProtoModel):
    name: str = field_(R)
    description: str | None = field_()
    rootAgent: AgentName | None = field_(doc="Deprecated: use agent.")
    agent: AgentName | None = field_()


class DataMapping(ProtoModel):
    sourceToolName: str | None = field_(doc="The tool whose output feeds the widget.")
    fieldMappings: dict[str, str] | None = field_()
    pythonFunction: PythonFunction | None = field_()
    mode: DataMappingMode | None = field_()
    pythonScript: str | None = field_(doc="Deprecated: use pythonFunction.")


class TextResponseConfig(ProtoModel):
    type: TextResponseType | None = field_()
    staticText: str | None = field_()
    textResponseInstruction: str | None = field_()


class WidgetTool(ProtoModel):
    oneofs = {"input": (("parameters",), False)}
    parameters: Schema | None = field_()
    name: str = field_(R)
    description: str | None = field_()
    widgetType: WidgetType | None = field_()
    uiConfig: Struct | None = field_()
    dataMapping: DataMapping | None = field_()
    textResponseConfig: TextResponseConfig | None = field_()


class AgentInterface(ProtoModel):
    url: str = field_(R)
    protocolBinding: str = field_(R, "JSONRPC, GRPC or HTTP+JSON.")
    tenant: str | None = field_()
    protocolVersion: str = field_(R)


class AgentSkill(ProtoModel):
    id: str = field_(R)
    name: str = field_(R)
    description: str = field_(R)
    tags: list[str] = field_(R)
    examples: list[str] | None = field_()
    inputModes: list[str] | None = field_()
    outputModes: list[str] | None = field_()


class AgentCard(ProtoModel):
    name: str = field_(R)
    description: str = field_(R)
    supportedInterfaces: list[AgentInterface] = field_(R)
    version: str = field_(R)
    skills: list[AgentSkill] = field_(R)


class RemoteAgentTool(ProtoModel):
    name: str = field_(R)
    description: str = field_(R)
    agentCard: AgentCard = field_(R)


class CodeBlock(ProtoModel):
    pythonCode: str = field_(R)


class ToolFakeConfig(ProtoModel):
    oneofs = {"tool_response": (("codeBlock",), False)}
    codeBlock: CodeBlock | None = field_()
    enableFakeMode: bool | None = field_()


TOOL_TYPES: tuple[str, ...] = (
    "clientFunction",
    "openApiTool",
    "googleSearchTool",
    "connectorTool",
    "dataStoreTool",
    "pythonFunction",
    "mcpTool",
    "fileSearchTool",
    "systemTool",
    "agentTool",
    "widgetTool",
    "remoteAgentTool",
)


class Tool(ProtoModel):
    oneofs = {"tool_type": (TOOL_TYPES, True)}
    clientFunction: ClientFunction | None = field_()
    openApiTool: OpenApiTool | None = field_()
    googleSearchTool: GoogleSearchTool | None = field_()
    connectorTool: ConnectorTool | None = field_()
    dataStoreTool: DataStoreTool | None = field_()
    pythonFunction: PythonFunction | None = field_()
    mcpTool: McpTool | None = field_(doc="Managed by an MCP toolset; never created directly.")
    fileSearchTool: FileSearchTool | None = field_()
    systemTool: SystemTool | None = field_()
    agentTool: AgentTool | None = field_()
    widgetTool: WidgetTool | None = field_()
    remoteAgentTool: RemoteAgentTool | None = field_()
    name: str | None = field_(ID, "projects/*/locations/*/apps/*/tools/*, set by the server.")
    displayName: str | None = field_(OUT, "Derived from the tool type's name.")
    executionType: ExecutionType | None = field_()
    timeout: Duration | None = field_(doc="e.g. '30s'; default 30s sync, 60s async.")
    createTime: Timestamp | None = field_(OUT)
    updateTime: Timestamp | None = field_(OUT)
    etag: str | None = field_(doc="Changes on every write; guards updates and deletes.")
    generatedSummary: str | None = field_(OUT)
    toolFakeConfig: ToolFakeConfig | None = field_()


# --- Toolsets -----------------------------------------------------------------------------


class McpToolDefinition(ProtoModel):
    description: str | None = field_()
    inputSchema: Schema | None = field_()
    outputSchema: Schema | None = field_()


class McpToolOverride(ProtoModel):
    tool: str = field_(R)
    nameOverride: str | None = field_()
    descriptionOverride: str | None = field_()
    snapshot: McpToolDefinition | None = field_(OUT)


class McpToolset(ProtoModel):
    serverAddress: str = field_(R)
    apiAuthentication: ApiAuthentication | None = field_()
    serviceDirectoryConfig: ServiceDirectoryConfig | None = field_()
    tlsConfig: TlsConfig | None = field_()
    customHeaders: dict[str, str] | None = field_()
    toolOverrides: list[McpToolOverride] | None = field_()


class OpenApiToolset(ProtoModel):
    openApiSchema: str = field_(R)
    apiAuthentication: ApiAuthentication | None = field_()
    tlsConfig: TlsConfig | None = field_()
    serviceDirectoryConfig: ServiceDirectoryConfig | None = field_()
    ignoreUnknownFields: bool | None = field_()
    url: str | None = field_(doc="Server URL that replaces $env_var in the schema.")


class ConnectorToolset(ProtoModel):
    connection: ConnectionName = field_(R)
    authConfig: EndUserAuthConfig | None = field_()
    connectorActions: list[Action] = field_(R)


TOOLSET_TYPES: tuple[str, ...] = ("mcpToolset", "openApiToolset", "connectorToolset")


class Toolset(ProtoModel):
    oneofs = {"toolset_type": (TOOLSET_TYPES, True)}
    mcpToolset: McpToolset | None = field_()
    openApiToolset: OpenApiToolset | None = field_()
    connectorToolset: ConnectorToolset | None = field_()
    name: str | None = field_(ID, "projects/*/locations/*/apps/*/toolsets/*, set by the server.")
    displayName: str | None = field_(doc="Unique in the app.")
    description: str | None = field_()
    timeout: Duration | None = field_()
    createTime: Timestamp | None = field_(OUT)
    updateTime: Timestamp | None = field_(OUT)
    etag: str | None = field_()
    executionType: ExecutionType | None = field_()
    toolFakeConfig: ToolFakeConfig | None = field_()


resolve_forward_refs(globals())
