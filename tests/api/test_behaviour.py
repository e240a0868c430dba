"""The field-behaviour table: each rule true to its source, the lookups, and the docs page's list."""

from __future__ import annotations

import runpy

import pytest

from cesync.api import behaviour as fb
from cesync.api import descriptors
from tests.conftest import ROOT

RULES = fb.rules()
DESCRIPTOR_RULES = [r for r in RULES if r not in fb.OVERLAY]


def _proto_name(message: str, json_name: str) -> str:
    return next(f.name for f in descriptors.message(message).fields if f.json_name == json_name)


@pytest.mark.parametrize("rule", DESCRIPTOR_RULES, ids=[f"{r.behaviour}:{r.message[20:]}.{r.field}" for r in DESCRIPTOR_RULES])
def test_a_descriptor_rule_is_what_the_snapshot_says(rule: fb.Rule) -> None:
    if rule.behaviour == fb.DELETE_FORCE:
        request = f"{descriptors.package_of(rule.message)}.Delete{rule.message.rsplit('.', 1)[1]}Request"
        assert "force" in descriptors.message(request).fields_by_name
        assert rule.source.endswith(f"Delete{rule.message.rsplit('.', 1)[1]}Request.force")
    else:
        proto = _proto_name(rule.message, rule.field)
        assert rule.behaviour in descriptors.behaviors(rule.message, proto)
        said = descriptors.facts()["messages"][rule.message]["fields"][proto]
        newer = said.get("behaviour_source") or (said if said.get("source") != "proto" else None)
        if newer is None:  # the proto annotation
            assert rule.source.startswith(descriptors.message(rule.message).file.name)
            assert f".{proto} [{rule.behaviour}]" in rule.source
        else:  # the discovery document's (or a seed page's) description, quoted with its revision
            assert f"{newer['revision']}), " in rule.source or f"seed {newer['revision']}, " in rule.source
            assert rule.source.endswith(f'.{rule.field}: "{rule.behaviour.capitalize().replace("_", " ")}."')
    assert fb.has(rule.message, rule.field, rule.behaviour)


@pytest.mark.parametrize("rule", fb.OVERLAY, ids=[f"{r.behaviour}:{r.message[20:]}.{r.field}" for r in fb.OVERLAY])
def test_an_overlay_rule_names_a_real_field_and_its_source(rule: fb.Rule) -> None:
    assert rule.field in {f.json_name for f in descriptors.message(rule.message).fields}
    assert rule.source.startswith(
        (
            "GoogleCloudPlatform/magic-modules mmv1/products/ces/",
            "GoogleCloudPlatform/magic-modules mmv1/templates/terraform/samples/services/ces/",
            "google/cloud/ces_v1/types/",
        )
    )
    assert rule.behaviour in fb.BEHAVIOURS and rule.behaviour not in fb.DESCRIPTOR_BEHAVIOURS
    assert fb.rule(rule.message, rule.field, rule.behaviour) == rule
    if rule.detail:  # the toolset field that makes the tool type
        assert rule.detail in {f.json_name for f in descriptors.message(f"{descriptors.PACKAGE}.Toolset").fields}


def test_every_descriptor_annotation_is_a_rule() -> None:
    """Nothing in the snapshot is left out of the table (OPTIONAL is the absence of a rule)."""
    count = sum(
        1
        for entry in descriptors.facts()["messages"].values()
        for f in entry.get("fields", {}).values()
        for b in f.get("behaviors", ())
        if b != "OPTIONAL"
    )
    assert len([r for r in DESCRIPTOR_RULES if r.behaviour != fb.DELETE_FORCE]) == count


# The facts Google's own clients state (the protos, the Terraform provider), looked up as a consumer does.
@pytest.mark.parametrize(
    ("message", "field", "behaviour", "expected"),
    [
        ("Deployment", "whatsappCredentials", fb.INPUT_ONLY, True),
        ("Deployment", "instagram_credentials", fb.INPUT_ONLY, True),
        ("Deployment", "channelProfile", fb.INPUT_ONLY, False),
        ("App", "loggingSettings", fb.SERVER_DEFAULTED, True),
        ("App", "languageSettings", fb.SERVER_DEFAULTED, False),
        ("App", "etag", fb.OUTPUT_ONLY, True),
        ("google.cloud.ces.v1.Deployment", "etag", fb.OUTPUT_ONLY, True),
        ("Tool", "etag", fb.OUTPUT_ONLY, False),
        ("App", "locked", fb.APP_LOCK, True),
        ("ImportAppRequest", "ignoreAppLock", fb.LOCK_OVERRIDE, True),
        ("Tool", "pythonFunction", fb.READ_ONLY, False),
        ("Tool", "systemTool", fb.READ_ONLY, True),
        ("Tool", "name", fb.IDENTIFIER, True),
        ("App", "displayName", fb.REQUIRED, True),
    ],
)
def test_lookup(message: str, field: str, behaviour: str, expected: bool) -> None:
    assert fb.has(message, field, behaviour) is expected
    assert (behaviour in fb.of(message, field)) is expected


def test_kind_lookups() -> None:
    assert set(fb.kinds_with(fb.DELETE_FORCE)) == {"Tool", "Toolset", "Agent", "Guardrail", "Evaluation"}  # v1beta's too
    assert [m for m in ("App", "Tool", "Toolset", "Agent", "Guardrail", "Example", "Deployment") if not fb.etag_guards(m)] == [
        "App",
        "Deployment",
    ]
    assert not fb.delete_has_force("Deployment") and fb.delete_has_force("google.cloud.ces.v1.Tool")
    assert fb.fields("Deployment", fb.INPUT_ONLY) == ("whatsappCredentials", "instagramCredentials")
    assert set(fb.fields("Tool", fb.READ_ONLY)) == {"openApiTool", "connectorTool", "mcpTool", "remoteAgentTool", "systemTool"}
    assert fb.rule("Tool", "mcpTool", fb.READ_ONLY).detail == "mcpToolset"
    assert fb.of("App", "description") == frozenset({"OPTIONAL"})


def test_an_overlay_behaviour_is_read_without_the_descriptors() -> None:
    """overlay_rules gives what rules() has of an overlay-only behaviour; the server-made tool table
    (read by validate, which parses no descriptor) is fields' and rule's, in the descriptor's order."""
    from cesync.api.kinds import SERVER_MADE_TOOLS

    tool = f"{descriptors.PACKAGE}.Tool"
    assert fb.overlay_rules(tool, fb.READ_ONLY) == tuple(r for r in RULES if r.message == tool and r.behaviour == fb.READ_ONLY)
    assert fb.overlay_rules(tool, fb.REQUIRED) == ()
    made = fb.fields("Tool", fb.READ_ONLY)
    assert list(SERVER_MADE_TOOLS.items()) == [(f, fb.rule("Tool", f, fb.READ_ONLY).detail) for f in made]


def test_a_behaviour_the_facts_state_on_no_field_gives_no_fields_without_the_descriptors() -> None:
    """fields() answers () from the facts alone when they state the behaviour on none of the message's
    fields (validate's INPUT_ONLY question): true of every message, by short and full name."""
    answered = 0
    for full in descriptors.facts()["messages"]:
        descriptors.message(full)  # every message the facts name is in the descriptors
        for name in {full, descriptors.short_name(full)}:
            for behaviour in fb.DESCRIPTOR_BEHAVIOURS:
                if fb._stated_nowhere(name, behaviour):
                    answered += 1
                    at = fb.full_name(name)
                    assert not [r for r in RULES if r.message == at and r.behaviour == behaviour and r.field], (name, behaviour)
    assert answered > 1000
    assert not fb._stated_nowhere("Deployment", fb.INPUT_ONLY) and not fb._stated_nowhere("Tool", fb.READ_ONLY)


def test_an_unknown_field_is_an_error_not_a_silent_no() -> None:
    with pytest.raises(KeyError, match="no field 'loggingSetings'"):
        fb.has("App", "loggingSetings", fb.SERVER_DEFAULTED)


PAGE = ROOT / "docs" / "field-behaviour.md"


def test_the_docs_page_lists_every_rule_with_its_source() -> None:
    """docs/field-behaviour.md is generated from the table: stale, this fails."""
    gen = runpy.run_path(str(ROOT / "scripts" / "gen_behaviour_docs.py"))
    text = PAGE.read_text(encoding="utf-8")
    assert gen["updated"](text) == text, "run python scripts/gen_behaviour_docs.py"
    section = text[text.index(gen["START"]) : text.index(gen["END"])]
    for rule in RULES:
        if rule.behaviour in gen["BULK"] and rule.field != "etag":
            continue
        short = rule.message.removeprefix("google.cloud.ces.v1.").removeprefix("google.cloud.ces.")  # v1beta.Evaluation
        assert f"{short}.{rule.field}" in section or not rule.field
        assert rule.source in section


def test_the_docs_page_says_what_cesync_and_the_emulator_do_with_every_behaviour() -> None:
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("What cesync and the emulator do with each behaviour") :]
    rows = {line.split("|")[1].strip() for line in section.splitlines() if line.startswith("| ")}
    assert set(fb.BEHAVIOURS) <= rows, set(fb.BEHAVIOURS) - rows
