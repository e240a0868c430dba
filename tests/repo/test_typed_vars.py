"""A ${NAME} that is a whole value takes the type of the field it stands in (bool, number, duration)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cesync.api.kinds import KINDS
from cesync.errors import ConfigError
from cesync.models.base import Kind, specs
from cesync.repo.repo import load_repo
from cesync.repo.templating import field_at
from tests.helpers import make_repo

CONFIG = "version: 1\nenvironments:\n  local:\n    endpoint: embedded\n    project: p\n    location: us\n    app: a\n    vars:\n      V: %s\n"
FILES = {  # a file of each kind with one whole-value placeholder, and where the value lands
    "bool": ("guardrails/g.yaml", "displayName: G\nenabled: ${V}\nllmPromptSecurity: {defaultSettings: {}}\n", ("enabled",)),
    "nested bool": (
        "guardrails/g.yaml",
        "displayName: G\nllmPromptSecurity:\n  defaultSettings: {}\n  failOpen: ${V}\n",
        ("llmPromptSecurity", "failOpen"),
    ),
    "int32": (
        "guardrails/g.yaml",
        "displayName: G\nllmPolicy:\n  prompt: p\n  policyScope: USER_QUERY\n  maxConversationMessages: ${V}\n",
        ("llmPolicy", "maxConversationMessages"),
    ),
    "double": (
        "agents/a.yaml",
        "displayName: A\ninstruction: hi\nmodelSettings:\n  temperature: ${V}\n",
        ("modelSettings", "temperature"),
    ),
    "duration": ("tools/t.yaml", "clientFunction: {name: t}\ntimeout: ${V}\n", ("timeout",)),
}
VALUES = {
    "bool": st.booleans().flatmap(lambda b: st.sampled_from([json.dumps(b), f"'{b}'", f"'{str(b).upper()}'"])),
    "int32": st.integers(0, 10**6).map(str),
    "double": st.floats(0, 2, allow_nan=False).map(repr),
    "duration": st.integers(1, 3600).flatmap(lambda n: st.sampled_from([str(n), f"'{n}'", f"'{n}s'"])),
}


def _render(tmp: Path, case: str, value: str) -> Any:
    rel, text, path = FILES[case]
    root = make_repo(tmp, {"cesync.yaml": CONFIG % value, rel: text})
    repo = load_repo(root)
    kind = {"guardrails": "guardrail", "agents": "agent", "tools": "tool"}[rel.split("/")[0]]
    [body] = [d.body for d in repo.render(repo.env("local")) if d.key == (kind, Path(rel).stem)]
    for p in path:
        body = body[p]
    return body


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), case=st.sampled_from(sorted(FILES)))
def test_a_whole_value_placeholder_takes_the_fields_type(tmp_path_factory: pytest.TempPathFactory, data: Any, case: str) -> None:
    base = case.split()[-1]
    written = data.draw(VALUES[base])
    got = _render(tmp_path_factory.mktemp("typed"), case, written)
    plain = written.strip("'")
    expected: Any = {
        "bool": lambda: plain.lower() == "true",
        "int32": lambda: int(plain),
        "double": lambda: float(plain),
        "duration": lambda: plain if plain.endswith("s") else f"{plain}s",
    }[base]()
    assert got == expected and type(got) is type(expected), (written, got)


@pytest.mark.parametrize(("case", "value", "takes"), [("bool", "yes", "true or false"), ("int32", "'12a'", "a whole number")])
def test_a_value_of_the_wrong_type_names_the_field(tmp_path: Path, case: str, value: str, takes: str) -> None:
    with pytest.raises(ConfigError) as exc:
        _render(tmp_path, case, value)
    rel, _, path = FILES[case]
    [problem] = exc.value.problems
    assert problem.file == rel and f"but {'.'.join(path)} takes {takes}" in problem.message and "variable 'V'" in problem.message


def test_text_around_a_placeholder_stays_text(tmp_path: Path) -> None:
    root = make_repo(tmp_path, {"cesync.yaml": CONFIG % "'7'", "tools/t.yaml": "clientFunction: {name: 'n${V}'}\n"})
    repo = load_repo(root)
    assert [d.body["clientFunction"]["name"] for d in repo.render(repo.env("local")) if d.id == "t"] == ["n7"]


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(sorted(KINDS)), data=st.data())
def test_field_at_follows_the_model(kind: str, data: Any) -> None:
    """A path walked down the model's own field table (messages, list items, map values) ends at that field."""
    message = KINDS[kind].model
    path: list[str | int] = []
    spec = None
    for _ in range(data.draw(st.integers(1, 4))):
        table = specs(message)
        if not table:  # a message with no fields (an empty config): the path ends above it
            break
        name = data.draw(st.sampled_from(sorted(table)))
        spec = table[name]
        path.append(name)
        if spec.repeated:
            path.append(data.draw(st.integers(0, 3)))
        elif spec.map:
            path.append(data.draw(st.sampled_from(["k", "x-y"])))
        if spec.kind is not Kind.MESSAGE or spec.message is None:
            break
        message = spec.message
    assert field_at(KINDS[kind].model, tuple(path)) == spec


SKIP_CONFIG = (
    "version: 1\nenvironments:\n"
    "  dev: {endpoint: embedded, project: p, location: us, app: a}\n"
    "  prod: {endpoint: embedded, project: p, location: us, app: b, skip: [%s]}\n"
)


def test_an_environment_can_leave_a_resource_out(tmp_path: Path) -> None:
    root = make_repo(tmp_path, {"cesync.yaml": SKIP_CONFIG % "tools/debug", "tools/debug.yaml": "clientFunction: {name: d}\n"})
    repo = load_repo(root)
    assert {d.id for d in repo.render(repo.env("dev"))} == {"greet", "debug"}
    assert {d.id for d in repo.render(repo.env("prod"))} == {"greet"}


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ("tools/debugg", "skip entry 'tools/debugg' names no resource of the repo; did you mean 'tools/debug'?"),
        ("tool/debug", "skip entry 'tool/debug': write COLLECTION/ID"),
    ],
)
def test_a_skip_entry_must_name_a_resource(tmp_path: Path, entry: str, said: str) -> None:
    root = make_repo(tmp_path, {"cesync.yaml": SKIP_CONFIG % entry, "tools/debug.yaml": "clientFunction: {name: d}\n"})
    problems = load_repo(root).validate(["prod"])
    assert any(p.file == "cesync.yaml" and p.line == 4 and said in p.message for p in problems), problems


def test_a_reference_to_a_skipped_tool_is_an_error(tmp_path: Path) -> None:
    agent = "displayName: A\ninstruction: hi\ntools: [{ref: tools/debug}]\n"
    files = {
        "cesync.yaml": SKIP_CONFIG % "tools/debug",
        "tools/debug.yaml": "clientFunction: {name: d}\n",
        "agents/a.yaml": agent,
    }
    repo = load_repo(make_repo(tmp_path, files))
    assert repo.validate(["dev"]) == []
    [problem] = repo.validate(["prod"])
    assert problem.file == "agents/a.yaml" and "tools/debug is in environments.prod.skip" in problem.message and problem.line == 3
