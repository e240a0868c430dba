"""The official google-cloud-ces client cannot tell the emulator from the real service."""

from __future__ import annotations

import pytest
from google.api_core import exceptions
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import ces_v1
from google.protobuf import field_mask_pb2

from cesync.emulator.server import BackgroundServer
from tests.helpers import fast_polling

APP = "projects/p/locations/us/apps/a"


@pytest.fixture
def client(emulator: BackgroundServer) -> ces_v1.AgentServiceClient:
    return ces_v1.AgentServiceClient(
        credentials=AnonymousCredentials(),
        transport="rest",
        client_options=ClientOptions(api_endpoint=emulator.url),
    )


def test_crud_round_trip(client: ces_v1.AgentServiceClient) -> None:
    tool = ces_v1.Tool(
        python_function=ces_v1.PythonFunction(name="f", python_code='def f(x):\n    """Echo."""\n    return x\n'),
        execution_type=ces_v1.ExecutionType.SYNCHRONOUS,
        timeout={"seconds": 1, "nanos": 500_000_000},
    )
    created = client.create_tool(parent=APP, tool=tool, tool_id="t1")
    assert created.name == f"{APP}/tools/t1"
    assert created.etag and created.display_name == "f"
    assert created.python_function.description == "Echo."
    assert created.execution_type == ces_v1.ExecutionType.SYNCHRONOUS
    assert created.timeout.total_seconds() == 1.5

    listed = list(client.list_tools(parent=APP))
    assert [t.name for t in listed] == [f"{APP}/tools/t1"]
    with_system = list(client.list_tools(request={"parent": APP, "filter": "include_system_tools=true"}))
    assert len(with_system) > 1 and any(t.system_tool.name for t in with_system)

    got = client.get_tool(name=created.name)
    assert got.etag == created.etag

    got.python_function.python_code = "def f(x):\n    return 2 * x\n"
    updated = client.update_tool(tool=got, update_mask=field_mask_pb2.FieldMask(paths=["python_function.python_code"]))
    assert updated.etag != created.etag
    assert "2 * x" in updated.python_function.python_code
    assert updated.timeout.total_seconds() == 1.5  # outside the mask: untouched

    stale = ces_v1.Tool(name=created.name, etag=created.etag, timeout={"seconds": 9})
    with pytest.raises(exceptions.Conflict) as conflict:
        client.update_tool(tool=stale, update_mask=field_mask_pb2.FieldMask(paths=["timeout"]))
    assert "ABORTED" in str(conflict.value.response.json()["error"]["status"])

    with pytest.raises(exceptions.Conflict) as dup:
        client.create_tool(parent=APP, tool=tool, tool_id="t1")
    assert dup.value.response.json()["error"]["status"] == "ALREADY_EXISTS"

    client.delete_tool(request={"name": created.name, "etag": updated.etag})
    with pytest.raises(exceptions.NotFound):
        client.get_tool(name=created.name)


def test_invalid_argument_has_field_violations(client: ces_v1.AgentServiceClient) -> None:
    # A type a tool may be created as (a connector tool is its toolset's: refused before its fields
    # are looked at), with its REQUIRED name left out.
    bad = ces_v1.Tool(client_function=ces_v1.ClientFunction(description="no name"))
    with pytest.raises(exceptions.BadRequest) as exc:
        client.create_tool(parent=APP, tool=bad, tool_id="bad")
    error = exc.value.response.json()["error"]
    assert error["status"] == "INVALID_ARGUMENT"
    fields = {v["field"] for v in error["details"][0]["fieldViolations"]}
    assert "tool.clientFunction.name" in fields


def test_toolsets_round_trip(emulator: BackgroundServer) -> None:
    client = ces_v1.AgentServiceClient(
        credentials=AnonymousCredentials(), transport="rest", client_options=ClientOptions(api_endpoint=emulator.url)
    )
    toolset = ces_v1.Toolset(mcp_toolset=ces_v1.McpToolset(server_address="https://mcp.example/x"), description="d")
    created = client.create_toolset(parent=APP, toolset=toolset, toolset_id="ts")
    assert created.name == f"{APP}/toolsets/ts"
    assert [t.name for t in client.list_toolsets(parent=APP)] == [created.name]
    client.delete_toolset(name=created.name)
    assert list(client.list_toolsets(parent=APP)) == []


@pytest.mark.parametrize("value", ["nonsense", "tools/escalate", "projects/p/locations/us/apps/other/tools/t1"])
def test_a_reference_that_is_not_a_name_of_the_app_is_refused(client: ces_v1.AgentServiceClient, value: str) -> None:
    """Agent.tools carries google.api.resource_reference (ces.googleapis.com/Tool): a string that names
    no tool of the app is INVALID_ARGUMENT with a field violation, never stored as written."""
    agent = ces_v1.Agent(display_name=f"A {value}", llm_agent=ces_v1.Agent.LlmAgent(), tools=[value])
    with pytest.raises(exceptions.BadRequest) as refused:
        client.create_agent(parent=APP, agent=agent, agent_id="a1")
    [violation] = refused.value.response.json()["error"]["details"][0]["fieldViolations"]
    assert violation["field"] == "agent.tools[0]" and value in violation["description"]
    assert not [a for a in client.list_agents(parent=APP) if a.name.endswith("/a1")]


def test_v1beta_only_app_fields_are_kept(emulator: BackgroundServer) -> None:
    """App.evaluationSettings and evaluationPersonas exist in v1beta only: stored, returned and masked on
    /v1beta/ (Google's v1beta client), absent from /v1/ answers, and left alone by /v1/ updates."""
    from google.cloud import ces_v1beta

    options = ClientOptions(api_endpoint=emulator.url)
    beta = ces_v1beta.AgentServiceClient(credentials=AnonymousCredentials(), transport="rest", client_options=options)
    v1 = ces_v1.AgentServiceClient(credentials=AnonymousCredentials(), transport="rest", client_options=options)
    mode = ces_v1beta.EvaluationSettings.ScenarioExecutionMode.SPEED_OPTIMIZED
    app = ces_v1beta.App(
        display_name="Beta",
        evaluation_settings=ces_v1beta.EvaluationSettings(scenario_execution_mode=mode),
        evaluation_personas=[ces_v1beta.EvaluationPersona(name="p1", display_name="Impatient", personality="Terse.")],
    )
    created = beta.create_app(parent="projects/p/locations/us", app=app, app_id="beta").result(timeout=30, polling=fast_polling())
    assert created.evaluation_settings.scenario_execution_mode == mode
    assert [p.display_name for p in created.evaluation_personas] == ["Impatient"]

    got = beta.get_app(name=created.name)
    assert got.evaluation_settings.scenario_execution_mode == mode and len(got.evaluation_personas) == 1
    personas = [*got.evaluation_personas, ces_v1beta.EvaluationPersona(name="p2", display_name="Chatty")]
    beta.update_app(
        app=ces_v1beta.App(name=created.name, evaluation_personas=personas),
        update_mask=field_mask_pb2.FieldMask(paths=["evaluation_personas"]),
    )
    v1.update_app(
        app=ces_v1.App(name=created.name, description="v1 edit"),
        update_mask=field_mask_pb2.FieldMask(paths=["description"]),
    )
    after = beta.get_app(name=created.name)
    assert [p.display_name for p in after.evaluation_personas] == ["Impatient", "Chatty"]
    assert after.evaluation_settings.scenario_execution_mode == mode and after.description == "v1 edit"

    import httpx

    plain = httpx.get(f"{emulator.url}/v1/{created.name}").json()
    assert "evaluationSettings" not in plain and "evaluationPersonas" not in plain and plain["description"] == "v1 edit"
    too_many = [{"name": f"p{i}"} for i in range(31)]
    refused = httpx.patch(
        f"{emulator.url}/v1beta/{created.name}",
        params={"updateMask": "evaluationPersonas"},
        json={"evaluationPersonas": too_many},
    )
    assert refused.status_code == 400 and "at most 30" in refused.json()["error"]["message"]
    bad_mask = httpx.patch(f"{emulator.url}/v1beta/{created.name}", params={"updateMask": "evaluationSettings.nope"}, json={})
    assert bad_mask.status_code == 400
    on_v1 = httpx.patch(f"{emulator.url}/v1/{created.name}", params={"updateMask": "evaluationPersonas"}, json={})
    assert on_v1.status_code == 400  # v1's App has no such field
