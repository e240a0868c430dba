"""A value of the wrong type in a resource file (cesync.repo.loading.pydantic_problem): said in the
words of the files, never pydantic's ("Input should be a valid dictionary or instance of LlmAgent")."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cesync.repo.repo import load_repo
from tests.helpers import make_repo

# (file, text with {v} where the value goes, what the field takes)
FIELDS = [
    ("agents/a.yaml", "displayName: {v}\nllmAgent: {{}}\ninstruction: Hi.\n", "must be text"),
    ("agents/a.yaml", "displayName: A\nllmAgent: {v}\ninstruction: Hi.\n", "must be a mapping"),
    (
        "agents/a.yaml",
        "displayName: A\nllmAgent: {{}}\ninstruction: Hi.\nmodelSettings: {{temperature: {v}}}\n",
        "must be a number",
    ),
    (
        "guardrails/g.yaml",
        "displayName: G\nenabled: {v}\nllmPromptSecurity: {{defaultSettings: {{}}}}\n",
        "must be true or false",
    ),
    ("tools/t.yaml", "clientFunction: {{name: {v}}}\n", "must be text"),
]
VALUES = {"a list": "[x]", "a mapping": "{a: 1}", "the number 12": "12", "true or false": "true", "a string": "'yes'"}
JARGON = ("Input should be", "instance of", "valid dictionary", "(got int)", "(got float)", "(got bool)")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(FIELDS), value=st.sampled_from(sorted(VALUES)))
def test_a_value_of_the_wrong_type_is_said_in_words(
    tmp_path_factory: pytest.TempPathFactory, field: tuple[str, str, str], value: str
) -> None:
    file, text, takes = field
    root = make_repo(tmp_path_factory.mktemp("repo"), {file: text.format(v=VALUES[value])})
    problems = [str(p) for p in load_repo(root).validate() if p.file == file]
    for said in problems:
        assert not any(j in said for j in JARGON), said
    typed = [p for p in problems if takes in p]
    if typed:  # some values are of the right type, or convert (12 is a number)
        assert f"(got {value}" in typed[0], typed


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("displayName: G\nenabled: yes\nllmPromptSecurity: {defaultSettings: {}}\n", "write true or false"),
        ("displayName: 2024\nenabled: true\nllmPromptSecurity: {defaultSettings: {}}\n", "quote it to keep it as text: '2024'"),
    ],
)
def test_a_yaml_type_surprise_says_how_to_write_it(tmp_path: Path, text: str, hint: str) -> None:
    problems = [str(p) for p in load_repo(make_repo(tmp_path, {"guardrails/g.yaml": text})).validate()]
    assert any(hint in p for p in problems), problems


@pytest.mark.parametrize(("value", "newer"), [("SYNC", False), ("SYNCHRONUS", False), ("STREAMING", True)])
def test_an_enum_typo_is_not_sent_looking_for_a_newer_api(tmp_path: Path, value: str, newer: bool) -> None:
    """'SYNC' for SYNCHRONOUS is a typo: the advice to fetch a newer API description is for a value
    that could be newer than cesync (#33), not for the start of one it knows."""
    tool = f"pythonFunction: {{name: f, pythonCode: 'def f(): pass'}}\nexecutionType: {value}\n"
    problems = [str(p) for p in load_repo(make_repo(tmp_path, {"tools/t.yaml": tool})).validate()]
    (said,) = [p for p in problems if "executionType" in p]
    assert ("newer description" in said) is newer, said
