"""The emulator follows the field-behaviour table (cesync.api.behaviour), rule by rule, over HTTP.

Each test is driven by the table's rules, so a rule added there is enforced here or fails here.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import ces_v1
from google.protobuf import field_mask_pb2

from cesync.api import behaviour as fb
from cesync.api import descriptors
from cesync.emulator.resources import COLLECTIONS
from cesync.emulator.server import BackgroundServer
from cesync.emulator.writes import SERVER_DEFAULT_VALUES

LOCATION = "projects/p/locations/us"
APP = f"{LOCATION}/apps/a"
BY_MESSAGE = {c.message: c for c in COLLECTIONS.values()}
# A valid body of each kind the tests write (the emulator checks required fields).
BODIES: dict[str, dict[str, Any]] = {
    "tools": {"pythonFunction": {"pythonCode": "def f(x):\n    return x\n"}},
    "toolsets": {"mcpToolset": {"serverAddress": "https://mcp.example.com/mcp/"}},
    "agents": {"displayName": "A", "llmAgent": {}},
    "guardrails": {"displayName": "G", "contentFilter": {"bannedContents": ["x"], "matchType": "REGEXP_MATCH"}},
    "examples": {"displayName": "E"},
    "deployments": {"displayName": "D", "channelProfile": {"channelType": "WEB_UI"}},
}


def _filled(message: str) -> dict[str, Any]:
    """A value of the message with every REQUIRED string field set (enough for the credentials messages)."""
    desc = descriptors.message(message)
    out: dict[str, Any] = {}
    for f in desc.fields:
        if fb.has(message, f.json_name, fb.REQUIRED):
            assert f.type == f.TYPE_STRING, f"{message}.{f.name}: teach _filled this type"
            out[f.json_name] = f"secret-{f.json_name}-123456"
    return out


INPUT_ONLY = [r for r in fb.rules() if r.behaviour == fb.INPUT_ONLY]


@pytest.mark.parametrize("rule", INPUT_ONLY, ids=[f"{r.message[20:]}.{r.field}" for r in INPUT_ONLY])
def test_an_input_only_field_is_accepted_and_never_returned(emulator: BackgroundServer, rule: fb.Rule) -> None:
    collection = BY_MESSAGE[rule.message.rsplit(".", 1)[1]].name
    f = descriptors.message(rule.message).fields_by_name[
        next(x.name for x in descriptors.message(rule.message).fields if x.json_name == rule.field)
    ]
    value = _filled(f.message_type.full_name)
    with httpx.Client(base_url=emulator.url) as h:
        created = h.post(
            f"/v1/{APP}/{collection}", params={f"{collection[:-1]}Id": "one"}, json={**BODIES[collection], rule.field: value}
        )
        assert created.status_code == 200, created.text
        updated = h.patch(f"/v1/{APP}/{collection}/one", params={"updateMask": rule.field}, json={rule.field: value})
        assert updated.status_code == 200, updated.text
        replies = [created.text, updated.text, h.get(f"/v1/{APP}/{collection}/one").text, h.get(f"/v1/{APP}/{collection}").text]
    for text in replies:
        assert rule.field not in text and "secret-" not in text


ETAG_KINDS = sorted(c.name for c in COLLECTIONS.values() if c.name in BODIES)


@pytest.mark.parametrize("collection", ETAG_KINDS)
def test_a_stale_etag_aborts_an_update_only_where_the_etag_is_a_request_field(
    emulator: BackgroundServer, collection: str
) -> None:
    message = COLLECTIONS[collection].message
    field = "timeout" if collection == "tools" else "displayName"
    values = ("5s", "6s") if collection == "tools" else ("a", "b")
    url = f"/v1/{APP}/{collection}/one"
    with httpx.Client(base_url=emulator.url) as h:
        first = h.post(f"/v1/{APP}/{collection}", params={f"{collection[:-1]}Id": "one"}, json=BODIES[collection]).json()
        assert h.patch(url, params={"updateMask": field}, json={field: values[0]}).status_code == 200
        stale = h.patch(url, params={"updateMask": field}, json={field: values[1], "etag": first["etag"]})
        deleted = h.delete(f"/v1/{APP}/{collection}/one", params={"etag": first["etag"]})
    if fb.etag_guards(message):
        assert stale.status_code == 409 and stale.json()["error"]["status"] == "ABORTED"
    else:  # OUTPUT_ONLY etag: ignored in the request, like any output-only field
        assert stale.status_code == 200 and stale.json()[field] == values[1], stale.text
    assert deleted.status_code == 409  # Delete*Request.etag is a request field for every kind


def test_a_stale_app_etag_is_ignored_by_update_app(emulator: BackgroundServer) -> None:
    assert not fb.etag_guards("App")
    client = ces_v1.AgentServiceClient(
        credentials=AnonymousCredentials(), transport="rest", client_options=ClientOptions(api_endpoint=emulator.url)
    )
    app = client.get_app(name=APP)
    mask = field_mask_pb2.FieldMask(paths=["description"])
    client.update_app(app=ces_v1.App(name=APP, etag=app.etag, description="first"), update_mask=mask)
    second = client.update_app(app=ces_v1.App(name=APP, etag=app.etag, description="second"), update_mask=mask)
    assert second.description == "second"


def test_the_official_client_gets_no_credentials_back(emulator: BackgroundServer) -> None:
    client = ces_v1.AgentServiceClient(
        credentials=AnonymousCredentials(), transport="rest", client_options=ClientOptions(api_endpoint=emulator.url)
    )
    creds = ces_v1.WhatsAppCredentials(
        **{k: "123456" for k in ("auth_code", "pin", "phone_number", "business_account_id", "waba_id", "conversation_profile_id")}
    )
    profile = ces_v1.ChannelProfile(channel_type=ces_v1.ChannelProfile.ChannelType.WEB_UI)
    made = client.create_deployment(
        parent=APP,
        deployment=ces_v1.Deployment(display_name="W", channel_profile=profile, whatsapp_credentials=creds),
        deployment_id="w",
    )
    assert "whatsapp_credentials" not in ces_v1.Deployment.to_dict(made, always_print_fields_with_no_presence=False)
    assert not client.get_deployment(name=made.name).whatsapp_credentials.pin


SERVER_DEFAULTED = [r for r in fb.rules() if r.behaviour == fb.SERVER_DEFAULTED]


@pytest.mark.parametrize("rule", SERVER_DEFAULTED, ids=[f"{r.message[20:]}.{r.field}" for r in SERVER_DEFAULTED])
def test_a_server_defaulted_field_is_filled_when_left_out(rule: fb.Rule) -> None:
    assert rule.message == f"{descriptors.PACKAGE}.App", "teach this test the kind"
    default = SERVER_DEFAULT_VALUES[("App", rule.field)]
    with BackgroundServer(auto_create_apps=False, operation_delay=0) as s, httpx.Client(base_url=s.url) as h:
        for app_id, given in (("left-out", None), ("named", {"cloudLoggingSettings": {"enableCloudLogging": True}})):
            body = {"displayName": app_id, **({rule.field: given} if given else {})}
            assert h.post(f"/v1/{LOCATION}/apps", params={"appId": app_id}, json=body).status_code == 200
            got = h.get(f"/v1/{LOCATION}/apps/{app_id}").json()
            assert got[rule.field] == (given or default)
        cleared = h.patch(f"/v1/{LOCATION}/apps/named", params={"updateMask": rule.field}, json={})
        assert cleared.json()[rule.field] == default  # cleared: the server fills it again


APP_LOCK = [r for r in fb.rules() if r.behaviour == fb.APP_LOCK]


@pytest.mark.parametrize("rule", APP_LOCK, ids=[r.field for r in APP_LOCK])
def test_a_locked_app_refuses_every_write_but_the_unlock(emulator: BackgroundServer, rule: fb.Rule) -> None:
    with httpx.Client(base_url=emulator.url) as h:
        for collection, body in BODIES.items():
            assert h.post(f"/v1/{APP}/{collection}", params={f"{collection[:-1]}Id": "one"}, json=body).status_code == 200
        assert h.patch(f"/v1/{APP}", params={"updateMask": rule.field}, json={rule.field: True}).json()[rule.field] is True
        refused = [
            h.patch(f"/v1/{APP}", params={"updateMask": "description"}, json={"description": "x"}),
            h.patch(
                f"/v1/{APP}", params={"updateMask": f"{rule.field},description"}, json={rule.field: True, "description": "x"}
            ),
            h.delete(f"/v1/{LOCATION}/apps/a"),
        ]
        for collection, body in BODIES.items():
            refused += [
                h.post(f"/v1/{APP}/{collection}", params={f"{collection[:-1]}Id": "two"}, json=body),
                h.patch(f"/v1/{APP}/{collection}/one", json=body),
                h.delete(f"/v1/{APP}/{collection}/one"),
            ]
        for r in refused:
            assert r.status_code == 400 and r.json()["error"]["status"] == "FAILED_PRECONDITION", r.text
            assert "locked" in r.json()["error"]["message"]
        assert h.get(f"/v1/{APP}/tools/one").status_code == 200  # reads are not modifications
        assert h.post(f"/v1/{APP}/versions", json={"displayName": "v"}).status_code == 200  # a copy, not a change
        unlocked = h.patch(f"/v1/{APP}", params={"updateMask": f"{rule.field},description"}, json={"description": "y"})
        assert unlocked.status_code == 200 and rule.field not in unlocked.json()
        assert h.delete(f"/v1/{APP}/tools/one").status_code == 200


def test_the_official_client_meets_the_lock_as_failed_precondition(emulator: BackgroundServer) -> None:
    from google.api_core import exceptions

    client = ces_v1.AgentServiceClient(
        credentials=AnonymousCredentials(), transport="rest", client_options=ClientOptions(api_endpoint=emulator.url)
    )
    client.update_app(app=ces_v1.App(name=APP, locked=True), update_mask=field_mask_pb2.FieldMask(paths=["locked"]))
    with pytest.raises(exceptions.BadRequest, match="is locked"):  # HTTP 400: FAILED_PRECONDITION
        client.create_tool(
            parent=APP, tool=ces_v1.Tool(python_function=ces_v1.PythonFunction(python_code="def f():\n  return 1\n")), tool_id="t"
        )


@pytest.mark.parametrize(
    ("field", "credentials"),
    [
        (
            "whatsappCredentials",
            {"authCode": "a", "pin": "123456", "phoneNumber": "+1555", "businessAccountId": "b", "wabaId": "w"},
        ),
        ("instagramCredentials", {"authCode": "a"}),
    ],
)
def test_a_conversation_profile_id_may_be_left_out(emulator: BackgroundServer, field: str, credentials: dict[str, str]) -> None:
    """WhatsAppCredentials and InstagramCredentials.conversationProfileId: REQUIRED in the 0.7.2 protos,
    "Optional." in Google's discovery document ces.v1.json (rev 20261016), which the service serves."""
    import httpx

    body = {"displayName": field, "channelProfile": {"channelType": "WEB_UI"}, field: credentials}
    made = httpx.post(f"{emulator.url}/v1/{APP}/deployments", params={"deploymentId": field.lower()}, json=body)
    assert made.status_code == 200, made.text
    missing = {k: v for k, v in credentials.items() if k != "authCode"}  # a field both still require
    refused = httpx.post(f"{emulator.url}/v1/{APP}/deployments", json={**body, "displayName": "x", field: missing})
    assert refused.status_code == 400 and f"{field}.authCode" in refused.text
