"""cesync.yaml's model: endpoints (one check for endpoint: and --endpoint) and resource-name ids."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cesync.errors import CesyncError, ConfigError
from cesync.repo.config import check_segment, normalize_endpoint
from cesync.repo.repo import EnvTarget, load_repo
from tests.helpers import cesync, make_repo

ENDPOINTS_OK = [
    ("embedded", "embedded"),
    ("127.0.0.1:8765", "http://127.0.0.1:8765"),  # what `cesync emulator` prints
    ("localhost:8765", "http://localhost:8765"),
    ("[::1]:8765", "http://[::1]:8765"),
    ("127.3.4.5:1", "http://127.3.4.5:1"),
    ("http://127.0.0.1:8765/", "http://127.0.0.1:8765"),
    ("http://emulator:8765", "http://emulator:8765"),
    ("https://ces.googleapis.com", "https://ces.googleapis.com"),
    ("https://ces.eu.rep.googleapis.com:443", "https://ces.eu.rep.googleapis.com:443"),
]
ENDPOINTS_BAD = [
    ("emulator:8765", "write http://emulator:8765"),  # not loopback: never guessed
    ("ces.googleapis.com", "has no scheme"),
    ("10.0.0.5:8765", "write http://10.0.0.5:8765"),
    ("127.0.0.1", "has no scheme"),
    ("localhost:notaport", "has no scheme"),
    ("ftp://127.0.0.1:21", "scheme must be http"),
    ("https://ces.googleapis.com@evil.example", "user info"),
    ("https://user:pw@ces.googleapis.com", "user info"),
    ("https://ces.googleapis.com/v1/projects", "without a path"),
    ("https://ces.googleapis.com?x=1", "without a path"),
    ("https://ces.googleapis.com#frag", "without a path"),
    ("https://ces.googleapis.com:99999", "port"),
    ("https://", "no valid host"),
    ("https://bad_host!.example", "no valid host"),
    ("http://127.0.0.1:8765 ", "without spaces"),
    ("", "must be 'embedded'"),
]


@pytest.mark.parametrize(("value", "expected"), ENDPOINTS_OK)
def test_endpoint_accepted(value: str, expected: str) -> None:
    assert normalize_endpoint(value) == expected
    assert normalize_endpoint(expected) == expected  # idempotent: safe to apply twice


@pytest.mark.parametrize(("value", "hint"), ENDPOINTS_BAD)
def test_endpoint_refused_with_hint(value: str, hint: str) -> None:
    with pytest.raises(ValueError, match=re.escape(hint)):
        normalize_endpoint(value)


@pytest.mark.parametrize(("value", "hint"), ENDPOINTS_BAD[:3])
def test_endpoint_option_and_file_share_the_check(tmp_path: Path, value: str, hint: str) -> None:
    """--endpoint and endpoint: give the same answer; neither reaches Google auth."""
    config = f"version: 1\nenvironments:\n  local:\n    endpoint: '{value}'\n    project: p\n    location: us\n    app: a\n"
    repo = make_repo(tmp_path, {"cesync.yaml": config})
    from_file = cesync("validate", "--dir", str(repo))
    assert from_file.returncode == 1 and "cesync.yaml:4:" in from_file.stderr and hint in from_file.stderr, from_file.stderr
    fixture = make_repo(tmp_path / "b", {})
    from_option = cesync(
        "plan", "--dir", str(fixture), "--endpoint", value, env={"GOOGLE_APPLICATION_CREDENTIALS": "/nonexistent"}
    )
    assert from_option.returncode == 1 and hint in from_option.stderr, from_option.stderr
    assert "credentials" not in from_option.stderr and "Traceback" not in from_option.stderr


def test_emulator_printed_host_port_works_as_endpoint(tmp_path: Path, emulator: object) -> None:
    host = emulator.host  # type: ignore[attr-defined]  # "127.0.0.1:PORT", as `cesync emulator` prints it
    result = cesync("plan", "--dir", str(make_repo(tmp_path, {})), "--endpoint", host)
    assert result.returncode == 0 and "greet" in result.stdout, result.stderr


# --- ids that go into URLs ------------------------------------------------------------------

DANGEROUS = ["/", "?", "#", "%", ":", "..", " ", "\\", "\n", "@", "&", "=", "%2F", "\u2215", "*"]
bad_ids = st.one_of(
    st.builds(
        lambda a, d, b: a + d + b,
        st.from_regex(r"[a-z0-9]{0,6}", fullmatch=True),
        st.sampled_from(DANGEROUS),
        st.from_regex(r"[a-z0-9]{0,6}", fullmatch=True),
    ),
    st.sampled_from(["", ".", "..", "a.", ".a", "x" * 129, "a\n", "a\r\n"]),  # "$" in a regex lets a trailing newline in
)
good_ids = st.from_regex(r"[A-Za-z0-9_-]{1,20}(\.[A-Za-z0-9_-]{1,8}){0,2}", fullmatch=True)
FIELDS = ["project", "location", "app"]


@settings(max_examples=120, deadline=None)
@given(value=bad_ids, what=st.sampled_from(FIELDS))
def test_bad_ids_never_reach_a_url(value: str, what: str) -> None:
    if what == "project" and re.fullmatch(r"[a-z0-9-]+(\.[a-z0-9-]+)+:[A-Za-z0-9_-]+", value):
        return  # a domain-scoped project id (example.com:proj) is legitimate
    with pytest.raises(ValueError, match=f"invalid {what} id"):
        check_segment(value, what)
    fields = {"project": "p", "location": "us", "app": "a", what: value}
    with pytest.raises(CesyncError, match=f"invalid {what} id"):  # --app and any other EnvTarget
        EnvTarget("e", fields["project"], fields["location"], fields["app"], None, {}, {}, False)


@settings(max_examples=60, deadline=None)
@given(value=good_ids, what=st.sampled_from(FIELDS))
def test_plain_ids_pass(value: str, what: str) -> None:
    if what == "project":
        value = value.replace(".", "-")  # project ids have no dots (except example.com:project)
    assert check_segment(value, what) == value


def test_domain_scoped_project() -> None:
    assert check_segment("example.com:my-project", "project") == "example.com:my-project"
    with pytest.raises(ValueError):
        check_segment("example.com:my-project", "app")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=bad_ids, what=st.sampled_from(FIELDS), where=st.sampled_from(["environment", "defaults"]))
def test_bad_ids_in_cesync_yaml_are_positioned(
    tmp_path_factory: pytest.TempPathFactory, value: str, what: str, where: str
) -> None:
    if what == "project" and ":" in value and re.fullmatch(r"[a-z0-9-]+(\.[a-z0-9-]+)+:[A-Za-z0-9_-]+", value):
        return
    if where == "defaults" and what == "app":
        where = "environment"  # app is per environment only
    env = {"project": "p", "location": "us", "app": "a"}
    defaults = {}
    (env if where == "environment" else defaults)[what] = value
    if where == "defaults":
        env.pop(what)
    config = {"version": 1, "defaults": defaults, "environments": {"local": env}}
    repo = make_repo(tmp_path_factory.mktemp("ids"), {"cesync.yaml": json.dumps(config, indent=1)})
    with pytest.raises(ConfigError) as info:
        load_repo(repo)
    [problem] = info.value.problems
    assert problem.file == "cesync.yaml" and problem.line > 1 and f"invalid {what} id" in problem.message


def test_app_option_with_a_query_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = cesync(
        "export", "--app", "projects/p/locations/us/apps/a?x=1", "--env", "prod", "--endpoint", "embedded", "--out", str(out)
    )
    assert result.returncode == 1 and "invalid app id" in result.stderr and not out.exists(), result.stderr


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=bad_ids, kind=st.sampled_from(["tools", "toolsets"]), how=st.sampled_from(["id", "ref"]))
def test_bad_resource_ids_are_positioned(tmp_path_factory: pytest.TempPathFactory, value: str, kind: str, how: str) -> None:
    """Tool and toolset ids (id: or a {ref:} target) are the last URL segment: the same rule, with a position."""
    quoted = json.dumps(value)
    if how == "id":
        files = {f"{kind}/x.yaml": f"id: {quoted}\nclientFunction: {{name: x}}\n"}
        expected = ("id", f"invalid {kind[:-1]} id")
    else:
        files = {
            "tools/x.yaml": f"widgetTool:\n  name: w\n  dataMapping:\n    sourceToolName: {{ref: {json.dumps(kind + '/' + value)}}}\n"
        }
        expected = ("ref", "ref must be tools/<id>")
    repo = load_repo(make_repo(tmp_path_factory.mktemp("rid"), files))
    problems = [p for p in [*repo.load_problems, *repo.validate()] if expected[1] in p.message]
    line = 1 if how == "id" else 4  # the id: value, or the {ref:} value
    assert problems and all(p.line == line and p.col > 1 for p in problems), [str(p) for p in problems]


@pytest.mark.parametrize(("text", "shape"), [("", "not empty"), ("- local\n", "not a list"), ("just text\n", "not a string")])
def test_cesync_yaml_that_is_not_a_mapping_says_what_it_must_hold(tmp_path: Path, text: str, shape: str) -> None:
    repo = make_repo(tmp_path, {"cesync.yaml": text})
    result = cesync("validate", "--dir", str(repo))
    assert result.returncode == 1, result.stderr
    assert f"cesync.yaml:1:1: cesync.yaml must be a mapping with 'version: 1' and 'environments:', {shape}" in result.stderr
    assert "instance of Config" not in result.stderr


def test_a_wrong_version_names_the_one_allowed(tmp_path: Path) -> None:
    # The allowed value is a number, which pydantic does not quote: the message listed none.
    repo = make_repo(tmp_path, {})
    text = (repo / "cesync.yaml").read_text(encoding="utf-8")
    assert "version: 1" in text
    (repo / "cesync.yaml").write_text(text.replace("version: 1", "version: 2"), encoding="utf-8")
    result = cesync("validate", "--dir", str(repo))
    assert result.returncode == 1 and "version: 2 is not a valid value (one of: 1)" in result.stderr, result.stderr
