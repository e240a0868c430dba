"""What cesync says: counts in the singular for one, the app named as the app, no secret echoed whole."""

from __future__ import annotations

import re
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from cesync.api.kinds import KINDS, kind_of_name
from cesync.api.resource import Resource
from cesync.api.words import count
from cesync.core.planbuild import build_plan
from cesync.models import messages
from cesync.render import render
from tests.helpers import cesync_in_process

P = "projects/p/locations/us/apps/a"


@given(n=st.integers(0, 10_000), noun=st.sampled_from(["tool", "toolset", "guardrail", "remote resource", "file"]))
def test_counts_agree_with_their_number(n: int, noun: str) -> None:
    said = count(n, noun)
    assert said == f"{n} {noun}" if n == 1 else said == f"{n} {noun}s"


def test_every_kind_is_counted_in_words() -> None:
    for kind in KINDS.values():
        assert re.fullmatch(r"[a-z]+( [a-z]+)*", kind.singular) and re.fullmatch(r"[a-z]+( [a-z]+)*", kind.plural), kind
        assert kind.counted(1) == f"1 {kind.singular}" and kind.counted(2) == f"2 {kind.plural}"
    said = {k.name: (k.singular, k.plural) for k in KINDS.values()}
    assert said["tool"] == ("tool", "tools") and said["toolset"] == ("toolset", "toolsets")
    assert said["evaluationExpectation"] == ("evaluation expectation", "evaluation expectations")
    assert said["scheduledEvaluationRun"] == ("scheduled evaluation run", "scheduled evaluation runs")


def test_the_app_is_named_the_app() -> None:
    assert KINDS["app"].label("app") == "the app" and KINDS["tool"].label("greet") == "tool greet"
    assert kind_of_name(P).name == "app"  # its errors say 'update app', not 'update tool'
    plan = build_plan("e", P, [Resource(KINDS["app"], "app", {"displayName": "A"})], [])
    text = render(plan, "text")
    assert "+ the app will be created" in text and "app app" not in text
    unmanaged = [Resource(KINDS["tool"], "x", {"name": f"{P}/tools/x", "etag": "e", "clientFunction": {"name": "x"}})]
    assert "1 remote resource not in the repo" in render(build_plan("e", P, [], unmanaged), "text")


@given(secret=st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=9, max_size=60))
def test_a_value_in_a_secret_version_field_is_never_echoed_whole(secret: str) -> None:
    if secret.startswith("projects/"):
        return
    with pytest.raises(ValidationError) as exc:
        messages.ApiKeyConfig.model_validate({"keyName": "k", "apiKeySecretVersion": secret, "requestLocation": "HEADER"})
    said = " ".join(e["msg"] for e in exc.value.errors())  # what cesync prints (repo/loading.pydantic_problem)
    assert secret not in said and "not shown" in said and "Secret Manager" in said


def test_target_help_names_every_collection() -> None:
    shown = cesync_in_process("plan", "--help").stdout
    assert all(c in shown for c in ("agents/ID", "guardrails/ID", "examples/ID", "deployments/ID"))


def test_emulator_help_says_sqlite() -> None:
    shown = cesync_in_process("emulator", "--help").stdout
    assert "SQLite" in shown and "JSON file" not in shown


def test_the_tour_writes_no_escape_codes_into_a_file(tour: subprocess.CompletedProcess[str]) -> None:
    """The tour, its output sent to a file: no raw ANSI codes, the import's hint matches its plan."""
    text = tour.stdout + tour.stderr
    assert tour.returncode == 0, text[-2000:]
    assert "\x1b" not in text
    assert "to create)" not in text and re.search(r"the repo defines \d+ resources; plan compares them with the app", text)
    assert "done: create the app" in text and "set once what" in text
