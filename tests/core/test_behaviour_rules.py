"""The pipeline's pure steps follow the field-behaviour table, rule by rule (cesync.api.behaviour)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cesync.api import behaviour as fb
from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.core.diff import diff_resource
from cesync.core.planbuild import build_plan

APP = "projects/p/locations/us/apps/a"
KIND_OF = {f"google.cloud.ces.v1.{k.model_name}": k.name for k in KINDS.values()}
DEPLOYMENT = {"displayName": "D", "channelProfile": {"channelType": "WEB_UI"}}
CREDENTIALS = {
    "whatsappCredentials": {
        "authCode": "auth-code-7731",
        "pin": "493817",
        "phoneNumber": "+15550100",
        "businessAccountId": "b-1",
        "wabaId": "w-1",
        "conversationProfileId": "c-1",
    },
    "instagramCredentials": {"authCode": "insta-code-5521", "conversationProfileId": "c-2"},
}
INPUT_ONLY = [r for r in fb.rules() if r.behaviour == fb.INPUT_ONLY]
SERVER_DEFAULTED = [r for r in fb.rules() if r.behaviour == fb.SERVER_DEFAULTED]
BASE = {"deployment": DEPLOYMENT, "app": {"displayName": "A"}}


def test_every_input_only_and_server_defaulted_rule_is_on_a_kind_cesync_manages() -> None:
    """normalize and diff apply these rules to a kind's top-level fields: a rule elsewhere needs teaching."""
    assert all(r.message in KIND_OF for r in (*INPUT_ONLY, *SERVER_DEFAULTED))


@pytest.mark.parametrize("rule", INPUT_ONLY, ids=[r.field for r in INPUT_ONLY])
def test_an_input_only_field_is_never_compared(rule: fb.Rule) -> None:
    kind = KIND_OF[rule.message]
    desired = {**BASE[kind], rule.field: CREDENTIALS[rule.field]}
    remote = {**BASE[kind], "name": f"{APP}/deployments/d", "etag": "e"}  # CES never returns it
    assert diff_resource(KINDS[kind], "d", desired, remote).update_mask == []
    changed = {**desired, rule.field: {**CREDENTIALS[rule.field], "authCode": "another-code"}}
    assert diff_resource(KINDS[kind], "d", changed, {**remote, rule.field: CREDENTIALS[rule.field]}).update_mask == []


@pytest.mark.parametrize("rule", INPUT_ONLY, ids=[r.field for r in INPUT_ONLY])
def test_an_input_only_field_is_sent_on_create_and_never_in_the_plan_file(rule: fb.Rule) -> None:
    kind = KIND_OF[rule.message]
    body = {**BASE[kind], rule.field: CREDENTIALS[rule.field]}
    # the workflow marks input-only fields sensitive (pipeline.masking.sensitive_fields)
    plan = build_plan("dev", APP, [Resource(KINDS[kind], "d", body)], [], sensitive={(kind, "d"): [(rule.field,)]})
    (change,) = plan.changes
    assert change.action == "create" and change.body == body  # what apply sends
    assert rule.field in change.note and "input only" in change.note
    text = plan.to_json()
    for secret in json.dumps(CREDENTIALS[rule.field]).split('"'):
        if len(secret) > 4 and secret not in ("authCode", "conversationProfileId"):
            assert secret not in text


@pytest.mark.parametrize("rule", SERVER_DEFAULTED, ids=[r.field for r in SERVER_DEFAULTED])
def test_a_server_defaulted_field_the_repo_does_not_name_is_not_a_change(rule: fb.Rule) -> None:
    kind = KIND_OF[rule.message]
    filled: dict[str, Any] = {"conversationLoggingSettings": {"disableConversationLogging": True}}
    remote = {**BASE[kind], rule.field: filled, "name": APP, "etag": "e"}
    assert diff_resource(KINDS[kind], "a", dict(BASE[kind]), remote).update_mask == []
    named = {**BASE[kind], rule.field: {"cloudLoggingSettings": {"enableCloudLogging": True}}}
    assert all(
        p.startswith(rule.field + ".") for p in diff_resource(KINDS[kind], "a", named, remote).update_mask
    )  # compared as usual
    assert diff_resource(KINDS[kind], "a", named, remote).update_mask
    assert diff_resource(KINDS[kind], "a", {**BASE[kind], rule.field: filled}, remote).update_mask == []
    assert diff_resource(KINDS[kind], "a", {**BASE[kind], "description": "x"}, remote).update_mask == ["description"]
