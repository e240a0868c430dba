"""The whole app through Google's official client: apps and their operations, every kind, versions, references, archives.

The emulator runs with ``autoCreateApps`` off, as CES does: an app exists once
CreateApp (a long-running operation the client polls) or importApp made it.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from google.api_core import exceptions
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import ces_v1
from google.protobuf import field_mask_pb2

from cesync.api import behaviour as fb
from cesync.emulator.server import BackgroundServer
from cesync.sync.archive import ARCHIVE_APP, find_app_root, read_archive
from tests.helpers import fast_polling

LOCATION = "projects/p/locations/us"
APP = f"{LOCATION}/apps/shop"
CODE = 'def lookup(order_id: str, verbose: bool = False) -> dict:\n    """Finds an order."""\n    return {"id": order_id}\n'


@pytest.fixture(scope="module")
def server() -> Iterator[BackgroundServer]:
    with BackgroundServer(auto_create_apps=False, operation_delay=0.3) as s:
        yield s


@pytest.fixture(scope="module")
def client(server: BackgroundServer) -> ces_v1.AgentServiceClient:
    return ces_v1.AgentServiceClient(
        credentials=AnonymousCredentials(), transport="rest", client_options=ClientOptions(api_endpoint=server.url)
    )


def _create_app(client: ces_v1.AgentServiceClient, app_id: str, **fields: object) -> ces_v1.App:
    operation = client.create_app(parent=LOCATION, app=ces_v1.App(display_name=app_id.title(), **fields), app_id=app_id)
    assert not operation.done()  # the operation takes its time: the client polls it
    return operation.result(timeout=30, polling=fast_polling())


def _tool(client: ces_v1.AgentServiceClient, app: str, tid: str) -> ces_v1.Tool:
    fn = ces_v1.PythonFunction(python_code=CODE.replace("lookup", tid))
    return client.create_tool(parent=app, tool=ces_v1.Tool(python_function=fn), tool_id=tid)


def _agent(client: ces_v1.AgentServiceClient, app: str, aid: str, **fields: object) -> ces_v1.Agent:
    agent = ces_v1.Agent(display_name=aid.title(), instruction=f"You are {aid}.", **fields)
    return client.create_agent(parent=app, agent=agent, agent_id=aid)


def test_apps_exist_once_created(client: ces_v1.AgentServiceClient) -> None:
    with pytest.raises(exceptions.NotFound):
        client.get_app(name=f"{LOCATION}/apps/never")
    with pytest.raises(exceptions.NotFound):
        list(client.list_tools(parent=f"{LOCATION}/apps/never"))
    app = _create_app(client, "first", description="d")
    assert app.name == f"{LOCATION}/apps/first" and app.etag and app.create_time
    with pytest.raises(exceptions.Conflict):
        client.create_app(parent=LOCATION, app=ces_v1.App(display_name="again"), app_id="first")
    with pytest.raises(exceptions.BadRequest):
        client.create_app(parent=LOCATION, app=ces_v1.App(description="no display name"), app_id="second")
    assert f"{LOCATION}/apps/first" in [a.name for a in client.list_apps(parent=LOCATION)]
    system = [t.name for t in client.list_tools(request={"parent": app.name, "filter": "include_system_tools=true"})]
    assert f"{app.name}/tools/end_session" in system  # an app comes with its system tools

    patched = client.update_app(
        app=ces_v1.App(name=app.name, etag=app.etag, global_instruction="Be brief."),
        update_mask=field_mask_pb2.FieldMask(paths=["global_instruction"]),
    )
    assert patched.global_instruction == "Be brief." and patched.description == "d" and patched.etag != app.etag
    # App.etag is OUTPUT_ONLY (app.proto), and a server ignores output-only fields in a request:
    # a stale one guards nothing (cesync reads the app back before writing it instead).
    again = client.update_app(
        app=ces_v1.App(name=app.name, etag=app.etag, description="x"),
        update_mask=field_mask_pb2.FieldMask(paths=["description"]),
    )
    assert again.description == "x" and again.etag not in (app.etag, patched.etag)
    variables = [ces_v1.App.VariableDeclaration(name="tier", description="customer tier", schema={"type_": "STRING"})]
    client.update_app(
        app=ces_v1.App(name=app.name, variable_declarations=variables),
        update_mask=field_mask_pb2.FieldMask(paths=["variable_declarations"]),
    )
    assert [v.name for v in client.get_app(name=app.name).variable_declarations] == ["tier"]

    client.delete_app(name=app.name).result(timeout=30, polling=fast_polling())
    with pytest.raises(exceptions.NotFound):
        client.get_app(name=app.name)


def test_every_kind_with_etags_and_references(client: ces_v1.AgentServiceClient) -> None:
    app = _create_app(client, "shop").name
    tool = _tool(client, app, "lookup")
    guard = client.create_guardrail(
        parent=app,
        guardrail=ces_v1.Guardrail(
            display_name="No PII",
            content_filter=ces_v1.Guardrail.ContentFilter(
                banned_contents=["ssn"], match_type=ces_v1.Guardrail.ContentFilter.MatchType.SIMPLE_STRING_MATCH
            ),
        ),
        guardrail_id="no-pii",
    )
    with pytest.raises(exceptions.BadRequest) as missing_type:
        client.create_guardrail(parent=app, guardrail=ces_v1.Guardrail(display_name="typeless"), guardrail_id="g2")
    assert "guardrail" in missing_type.value.message
    child = _agent(client, app, "refunds", tools=[tool.name])
    root = _agent(client, app, "root", child_agents=[child.name], guardrails=[guard.name])
    assert root.etag and root.create_time and root.child_agents == [child.name]
    with pytest.raises(exceptions.BadRequest):  # a name that does not exist
        _agent(client, app, "broken", tools=[f"{app}/tools/nope"])
    with pytest.raises(exceptions.Conflict):  # display names are unique among agents
        client.create_agent(parent=app, agent=ces_v1.Agent(display_name="Root"), agent_id="root2")

    app_now = client.update_app(
        app=ces_v1.App(name=app, root_agent=root.name, guardrails=[guard.name]),
        update_mask=field_mask_pb2.FieldMask(paths=["root_agent", "guardrails"]),
    )
    assert app_now.root_agent == root.name
    example = client.create_example(
        parent=app,
        example=ces_v1.Example(display_name="Refund", entry_agent=child.name),
        example_id="refund",
    )
    assert example.entry_agent == child.name

    # deleting what is referenced: refused, naming who refers; force removes the references
    for name, delete, who in (
        (tool.name, client.delete_tool, "agent(s) refunds"),
        (child.name, client.delete_agent, "agent(s) root"),
        (guard.name, client.delete_guardrail, "the app"),
    ):
        with pytest.raises(exceptions.BadRequest) as refused:
            delete(name=name)
        error = refused.value.response.json()["error"]
        assert error["status"] == "FAILED_PRECONDITION" and who in error["message"], error
    client.delete_tool(request={"name": tool.name, "force": True})
    assert list(client.get_agent(name=child.name).tools) == []
    client.delete_guardrail(request={"name": guard.name, "force": True})
    assert list(client.get_app(name=app).guardrails) == [] and list(client.get_agent(name=root.name).guardrails) == []
    with pytest.raises(exceptions.BadRequest):
        client.delete_agent(name=root.name)  # the app's root agent
    client.delete_agent(request={"name": child.name, "force": True})
    assert list(client.get_agent(name=root.name).child_agents) == []
    assert client.get_example(name=example.name).entry_agent == ""

    # updates: masks and etags as for tools
    fresh = client.get_agent(name=root.name)
    updated = client.update_agent(
        agent=ces_v1.Agent(name=root.name, etag=fresh.etag, instruction="New."),
        update_mask=field_mask_pb2.FieldMask(paths=["instruction"]),
    )
    assert updated.instruction == "New." and updated.display_name == "Root"
    with pytest.raises(exceptions.Conflict):
        client.delete_agent(request={"name": root.name, "etag": fresh.etag, "force": True})
    assert [e.name for e in client.list_examples(parent=app)] == [example.name]
    assert [g.name for g in client.list_guardrails(parent=app)] == []


def test_versions_deployments_and_restore(client: ces_v1.AgentServiceClient) -> None:
    app = _create_app(client, "versioned").name
    tool = _tool(client, app, "lookup")
    _agent(client, app, "root", tools=[tool.name])
    version = client.create_app_version(
        parent=app, app_version=ces_v1.AppVersion(display_name="v1", description="first"), app_version_id="v1"
    )
    assert version.snapshot.app.name == app and [a.display_name for a in version.snapshot.agents] == ["Root"]
    assert [t.name for t in version.snapshot.tools] == [tool.name] and version.creator and version.etag
    assert [v.name for v in client.list_app_versions(parent=app)] == [version.name]
    assert client.get_app_version(name=version.name).display_name == "v1"

    profile = ces_v1.ChannelProfile(channel_type=ces_v1.ChannelProfile.ChannelType.WEB_UI)
    deployment = client.create_deployment(
        parent=app,
        deployment=ces_v1.Deployment(display_name="web", app_version=version.name, channel_profile=profile),
        deployment_id="web",
    )
    assert deployment.app_version == version.name and deployment.etag
    with pytest.raises(exceptions.BadRequest) as in_use:
        client.delete_app_version(name=version.name)
    assert "deployment(s) web" in in_use.value.message

    # change the app, then restore the version: what the version holds comes back
    client.delete_agent(name=f"{app}/agents/root")
    client.delete_tool(name=tool.name)
    _tool(client, app, "other")
    operation = client.restore_app_version(name=version.name)
    assert not operation.done()
    operation.result(timeout=30, polling=fast_polling())
    assert [t.name for t in client.list_tools(parent=app)] == [tool.name]
    assert [a.name for a in client.list_agents(parent=app)] == [f"{app}/agents/root"]
    # "This will create a new app version from the current draft app" (RestoreAppVersion's docstring)
    [backup] = [v for v in client.list_app_versions(parent=app) if v.name != version.name]
    assert [t.name for t in backup.snapshot.tools] == [f"{app}/tools/other"] and not backup.snapshot.agents

    client.update_deployment(
        deployment=ces_v1.Deployment(name=deployment.name, app_version=f"{app}/versions/-"),
        update_mask=field_mask_pb2.FieldMask(paths=["app_version"]),
    )
    client.delete_app_version(name=version.name)  # no longer in use
    client.delete_app_version(name=backup.name)
    client.delete_deployment(name=deployment.name)
    assert list(client.list_deployments(parent=app)) == []


def test_export_import_round_trip(client: ces_v1.AgentServiceClient, tmp_path: Path) -> None:
    app = _create_app(client, "exported").name
    tool = _tool(client, app, "lookup")
    root = _agent(client, app, "root", tools=[tool.name, f"{app}/tools/end_session"])
    client.update_app(
        app=ces_v1.App(name=app, root_agent=root.name, global_instruction="Be kind."),
        update_mask=field_mask_pb2.FieldMask(paths=["root_agent", "global_instruction"]),
    )
    request = ces_v1.ExportAppRequest(name=app, export_format=ces_v1.ExportAppRequest.ExportFormat.JSON)
    content = client.export_app(request=request).result(timeout=30, polling=fast_polling()).app_content
    with zipfile.ZipFile(io.BytesIO(content)) as zf:
        names = set(zf.namelist())
        app_json = zf.read("exported/app.json").decode()
        zf.extractall(tmp_path)
    assert {"exported/app.json", "exported/agents/root/root.json", "exported/agents/root/instruction.txt"} <= names
    assert "exported/tools/lookup/python_function/python_code.py" in names and '"rootAgent": "root"' in app_json

    read = read_archive(find_app_root(tmp_path))  # what `cesync import-archive` reads
    assert [(r.kind.name, r.id) for r in read.resources] == [("tool", "lookup"), ("agent", "root"), ("app", "app")]
    assert read.resources[0].body["pythonFunction"]["pythonCode"] == CODE
    agent = read.resources[1].body  # short names back to full ones (import-archive writes them as refs)
    assert agent["tools"] == [f"{ARCHIVE_APP}/tools/lookup", f"{ARCHIVE_APP}/tools/end_session"]
    assert read.resources[2].body["rootAgent"] == f"{ARCHIVE_APP}/agents/root"

    imported = client.import_app(
        request=ces_v1.ImportAppRequest(parent=LOCATION, app_content=content, app_id="copy", display_name="Copy")
    ).result(timeout=30, polling=fast_polling())
    assert imported.name == f"{LOCATION}/apps/copy" and not imported.warnings
    copy = client.get_app(name=imported.name)
    assert copy.display_name == "Copy" and copy.root_agent == f"{imported.name}/agents/root"
    assert copy.global_instruction == "Be kind."
    agent = client.get_agent(name=f"{imported.name}/agents/root")
    assert list(agent.tools) == [f"{imported.name}/tools/lookup", f"{imported.name}/tools/end_session"]
    assert agent.instruction == "You are root."
    assert client.get_tool(name=f"{imported.name}/tools/lookup").python_function.python_code == CODE

    # re-import into the same app (REPLACE): display names match, nothing is duplicated
    again = client.import_app(request=ces_v1.ImportAppRequest(parent=LOCATION, app_content=content, app_id="copy")).result(
        timeout=30
    )
    assert not again.warnings and len(list(client.list_agents(parent=imported.name))) == 1


def test_import_reports_rejected_resources_and_bad_archives(client: ces_v1.AgentServiceClient) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("x/app.json", '{"displayName": "X", "rootAgent": "root"}')
        zf.writestr("x/agents/root/root.json", '{"displayName": "Root", "tools": ["broken"]}')
        zf.writestr("x/tools/broken/broken.json", '{"pythonFunction": {"pythonCode": 1}, "bogus": true}')
    result = client.import_app(
        request=ces_v1.ImportAppRequest(parent=LOCATION, app_content=buffer.getvalue(), app_id="partial")
    ).result(timeout=30, polling=fast_polling())
    assert any(w.startswith("tools/broken:") for w in result.warnings), result.warnings
    assert list(client.get_agent(name=f"{result.name}/agents/root").tools) == []  # the reference to it was dropped
    with pytest.raises(exceptions.BadRequest):
        client.import_app(request=ces_v1.ImportAppRequest(parent=LOCATION, app_content=b"not a zip", app_id="bad"))


class FakeClock:
    """A wall clock the test moves: when an operation is due is the emulator's business, not the machine's speed."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def test_operations_poll_and_report_errors() -> None:
    clock = FakeClock()
    with BackgroundServer(operation_clock=clock) as server, httpx.Client(base_url=server.url) as h:
        first = h.post(f"/v1/{LOCATION}/apps", params={"appId": "racy"}, json={"displayName": "Racy"}).json()
        second = h.post(f"/v1/{LOCATION}/apps", params={"appId": "racy"}, json={"displayName": "Racy"}).json()
        assert first["done"] is False and first["metadata"]["@type"].endswith("ces.v1.OperationMetadata")
        assert h.get(f"/v1/{first['name']}").json()["done"] is False
        clock.advance(0.19)
        assert h.get(f"/v1/{first['name']}").json()["done"] is False  # 0.2 s is the emulator's default delay
        clock.advance(0.02)
        done, failed = h.get(f"/v1/{first['name']}").json(), h.get(f"/v1/{second['name']}").json()
        outcomes = sorted([done, failed], key=lambda o: "error" in o)
        assert outcomes[0]["response"]["@type"] == "type.googleapis.com/google.cloud.ces.v1.App"
        assert outcomes[1]["error"]["code"] == 6  # ALREADY_EXISTS: the second create lost the race
        assert h.get(f"/v1/{LOCATION}/operations/nope").status_code == 404

        # an operation nobody polls still finishes once its time has come: the app is there
        h.post(f"/v1/{LOCATION}/apps", params={"appId": "unpolled"}, json={"displayName": "Unpolled"})
        assert h.get(f"/v1/{LOCATION}/apps/unpolled").status_code == 404  # not yet
        clock.advance(0.21)
        assert h.get(f"/v1/{LOCATION}/apps/unpolled").json()["displayName"] == "Unpolled"


def test_seeded_apps_and_the_settings() -> None:
    seeded = f"{LOCATION}/apps/seeded"
    with BackgroundServer(apps=[seeded], auto_create_apps=False) as s, httpx.Client(base_url=s.url) as h:
        assert h.get(f"/v1/{seeded}").json()["displayName"] == "seeded"
        assert h.get(f"/v1/{LOCATION}/apps/other/tools").json()["error"]["status"] == "NOT_FOUND"
        config = h.post("/admin/config", json={"autoCreateApps": True, "operationDelaySeconds": 0}).json()
        assert config == {"autoCreateApps": True, "operationDelaySeconds": 0.0}
        assert h.get(f"/v1/{LOCATION}/apps/other/tools").status_code == 200  # the old default: made on first use
        done = h.post(f"/v1/{LOCATION}/apps", params={"appId": "now"}, json={"displayName": "Now"}).json()
        assert done["done"] is True and done["response"]["name"] == f"{LOCATION}/apps/now"
        assert h.post("/admin/config", json={"operationDelaySeconds": -1}).status_code == 400


def test_the_command_checks_its_app_names() -> None:
    from click.testing import CliRunner

    from cesync.cli import main

    result = CliRunner().invoke(main, ["emulator", "--app", "apps/nope", "--no-auto-create-apps"])
    assert result.exit_code != 0 and "expected projects/PROJECT/locations/LOCATION/apps/APP" in result.output


def test_the_command_serves_apps_only_once_created(monkeypatch: pytest.MonkeyPatch) -> None:
    """As CES: `cesync emulator` invents no app unless asked to (--auto-create-apps)."""
    from click.testing import CliRunner

    import cesync.emulator.server
    from cesync.cli import main

    seen: list[bool] = []
    monkeypatch.setattr(cesync.emulator.server, "serve", lambda *a, **kw: seen.append(kw["auto_create_apps"]))
    for args in ([], ["--auto-create-apps"]):
        result = CliRunner().invoke(main, ["emulator", *args])
        assert result.exit_code == 0, result.output
    assert seen == [False, True]


def test_force_takes_a_toolset_entry_and_transfer_rule_along(client: ces_v1.AgentServiceClient) -> None:
    app = _create_app(client, "entries").name
    toolset = client.create_toolset(
        parent=app,
        toolset=ces_v1.Toolset(mcp_toolset=ces_v1.McpToolset(server_address="https://mcp.example/x")),
        toolset_id="docs",
    )
    child = _agent(client, app, "child")
    rule = ces_v1.TransferRule(
        child_agent=child.name,
        direction=ces_v1.TransferRule.Direction.PARENT_TO_CHILD,
        disable_planner_transfer=ces_v1.TransferRule.DisablePlannerTransfer(
            expression_condition=ces_v1.ExpressionCondition(expression="true")
        ),
    )
    root = _agent(
        client,
        app,
        "root",
        toolsets=[ces_v1.Agent.AgentToolset(toolset=toolset.name, tool_ids=["search"])],
        transfer_rules=[rule],
        tools=[f"{toolset.name}/tools/search"],
    )
    assert root.toolsets[0].toolset == toolset.name
    with pytest.raises(exceptions.BadRequest) as refused:
        client.delete_toolset(name=toolset.name)
    assert "agent(s) root" in refused.value.message
    client.delete_toolset(request={"name": toolset.name, "force": True})
    client.delete_agent(request={"name": child.name, "force": True})
    after = client.get_agent(name=root.name)
    assert list(after.toolsets) == [] and list(after.transfer_rules) == [] and list(after.tools) == []


KINDS = {
    "guardrail": (
        lambda app: ces_v1.Guardrail(
            display_name="G",
            content_filter=ces_v1.Guardrail.ContentFilter(
                banned_contents=["x"], match_type=ces_v1.Guardrail.ContentFilter.MatchType.REGEXP_MATCH
            ),
        ),
        "description",
    ),
    "example": (lambda app: ces_v1.Example(display_name="E"), "description"),
    "deployment": (
        lambda app: ces_v1.Deployment(
            display_name="D",
            channel_profile=ces_v1.ChannelProfile(channel_type=ces_v1.ChannelProfile.ChannelType.WEB_UI),
        ),
        "display_name",
    ),
    "agent": (lambda app: ces_v1.Agent(display_name="A", llm_agent=ces_v1.Agent.LlmAgent()), "description"),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_crud_of_every_kind(client: ces_v1.AgentServiceClient, kind: str) -> None:
    """create, get, list, masked update, a stale etag, delete with the etag: the same calls for every kind."""
    app = _create_app(client, f"crud-{kind}").name
    build, field = KINDS[kind]
    create, get, update, delete = (getattr(client, f"{verb}_{kind}") for verb in ("create", "get", "update", "delete"))
    listing = getattr(client, f"list_{kind}s")
    created = create(request={"parent": app, kind: build(app), f"{kind}_id": "one"})
    assert created.name == f"{app}/{kind}s/one" and created.etag and created.create_time
    assert get(name=created.name).etag == created.etag
    assert [r.name for r in listing(parent=app)] == [created.name]
    changed = type(created)(name=created.name, etag=created.etag, **{field: "changed"})
    updated = update(request={kind: changed, "update_mask": field_mask_pb2.FieldMask(paths=[field])})
    assert getattr(updated, field) == "changed" and updated.etag != created.etag
    assert updated.create_time == created.create_time and updated.update_time != created.update_time
    if fb.etag_guards(type(created).__name__):
        with pytest.raises(exceptions.Conflict):
            update(request={kind: changed, "update_mask": field_mask_pb2.FieldMask(paths=[field])})
    else:  # an OUTPUT_ONLY etag (Deployment) is ignored in an update, like every output-only field
        updated = update(request={kind: changed, "update_mask": field_mask_pb2.FieldMask(paths=[field])})
    with pytest.raises(exceptions.Conflict):  # a Delete request's etag is a request field for every kind
        delete(request={"name": created.name, "etag": created.etag})
    delete(request={"name": created.name, "etag": updated.etag})
    with pytest.raises(exceptions.NotFound):
        get(name=created.name)


def test_operations_through_the_client(client: ces_v1.AgentServiceClient) -> None:
    from google.longrunning import operations_pb2

    operation = client.create_app(parent=LOCATION, app=ces_v1.App(display_name="Ops"), app_id="ops")
    name = operation.operation.name
    assert name.startswith(f"{LOCATION}/operations/")
    client.cancel_operation(request={"name": name})  # a no-op here: it finishes anyway
    operation.result(timeout=30, polling=fast_polling())
    listed = client.list_operations(request=operations_pb2.ListOperationsRequest(name=LOCATION))
    assert name in [o.name for o in listed.operations]
    assert client.get_operation(request={"name": name}).done
    client.delete_operation(request={"name": name})
    with pytest.raises(exceptions.NotFound):
        client.get_operation(request={"name": name})


def test_a_state_file_of_an_earlier_version_opens(tmp_path: Path) -> None:
    """Apps without their data and agents in a table of their own (before apps and agents were resources)."""
    import sqlite3

    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE apps (name TEXT PRIMARY KEY, seq INTEGER NOT NULL DEFAULT 0);
        CREATE TABLE resources (
            app TEXT NOT NULL, collection TEXT NOT NULL, id TEXT NOT NULL,
            name TEXT NOT NULL, create_time TEXT NOT NULL, system INTEGER NOT NULL DEFAULT 0,
            display_name TEXT, names TEXT NOT NULL, ints TEXT NOT NULL,
            PRIMARY KEY (app, collection, id)
        );
        CREATE TABLE agents (app TEXT NOT NULL, id TEXT NOT NULL, tools TEXT NOT NULL, PRIMARY KEY (app, id));
        """
    )
    db.execute("INSERT INTO apps (name, seq) VALUES (?, 3)", (APP,))
    db.execute("INSERT INTO agents VALUES (?, 'support', ?)", (APP, f'["{APP}/tools/t"]'))
    db.commit()
    db.close()
    with BackgroundServer(path, auto_create_apps=False) as s, httpx.Client(base_url=s.url) as h:
        app = h.get(f"/v1/{APP}").json()
        assert app["name"] == APP and app["displayName"] == "shop" and app["etag"]
        agent = h.get(f"/v1/{APP}/agents/support").json()
        assert agent["displayName"] == "support" and agent["tools"] == [f"{APP}/tools/t"]


def test_yaml_export_imports_back(client: ces_v1.AgentServiceClient) -> None:
    app = _create_app(client, "yamly").name
    _tool(client, app, "lookup")
    _agent(client, app, "root", tools=[f"{app}/tools/lookup"])
    request = ces_v1.ExportAppRequest(name=app, export_format=ces_v1.ExportAppRequest.ExportFormat.YAML)
    content = client.export_app(request=request).result(timeout=30, polling=fast_polling()).app_content
    with zipfile.ZipFile(io.BytesIO(content)) as zf:
        assert {"yamly/app.yaml", "yamly/agents/root/root.yaml", "yamly/tools/lookup/lookup.yaml"} <= set(zf.namelist())
    result = client.import_app(request=ces_v1.ImportAppRequest(parent=LOCATION, app_content=content, app_id="yamly-copy")).result(
        timeout=30
    )
    assert not result.warnings
    assert list(client.get_agent(name=f"{result.name}/agents/root").tools) == [f"{result.name}/tools/lookup"]


def test_import_fills_env_var_from_environment_json(client: ces_v1.AgentServiceClient) -> None:
    schema = "openapi: 3.0.0\nservers: [{url: $env_var}]\npaths:\n  /o: {get: {operationId: o, responses: {'200': {description: ok}}}}\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("Shop/app.json", '{"displayName": "Shop"}')
        zf.writestr("Shop/toolsets/orders/orders.json", json.dumps({"openApiToolset": {"openApiSchema": schema}}))
        env = {"toolsets": {"orders": {"open_api_toolset.url": "https://orders.dev.example"}}, "agents": {"ghost": {"x": 1}}}
        zf.writestr("Shop/environment.json", json.dumps(env))
    result = client.import_app(
        request=ces_v1.ImportAppRequest(parent=LOCATION, app_content=buffer.getvalue(), app_id="env")
    ).result(timeout=30, polling=fast_polling())
    assert any("agents/ghost" in w for w in result.warnings)
    tool = client.get_toolset(name=f"{result.name}/toolsets/orders").open_api_toolset
    assert tool.url == "https://orders.dev.example" and "https://orders.dev.example" in tool.open_api_schema
