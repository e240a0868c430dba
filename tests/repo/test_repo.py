"""Loading and validating a repo: every bad input gets a positioned message."""

from __future__ import annotations

import json
import shutil
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cesync.core.yamlfile import load_text
from cesync.errors import ConfigError, Problem
from cesync.repo.repo import load_repo
from tests.conftest import EXAMPLES
from tests.helpers import FIXTURES, cesync, make_repo

BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)
)
# Few nodes, but one long string repeated: 3,000 x 20 kB = 60 MB of data from a 45 kB file.
TEXT_BOMB = (
    f'clientFunction:\n  name: f\n  description: &a "{"x" * 20_000}"\n'
    "  parameters:\n    type: OBJECT\n    properties: {p0: &s {type: STRING, description: *a}, "
    + ", ".join(f"p{i}: *s" for i in range(1, 3000))
    + "}\n"
)

CASES = [
    # (id, file, content, expected "file:line:col: message" fragment)
    ("malformed", "tools/x.yaml", "clientFunction: [1,\n", "tools/x.yaml:2:1: invalid YAML"),
    ("tabs", "tools/x.yaml", "clientFunction:\n\tname: x\n", "tools/x.yaml:2:1: invalid YAML: tab character"),
    (
        "duplicate-key",
        "tools/x.yaml",
        "clientFunction: {name: a}\nclientFunction: {name: b}\n",
        "tools/x.yaml:2:1: invalid YAML: the key 'clientFunction' is written twice in one mapping",
    ),
    ("list-not-mapping", "tools/x.yaml", "- a\n- b\n", "tools/x.yaml:1:1: a tool file must be a mapping"),
    ("app-not-mapping", "app.yaml", "- a\n", "app.yaml:1:1: an app file must be a mapping"),
    ("agent-not-mapping", "agents/x.yaml", "just text\n", "agents/x.yaml:1:1: an agent file must be a mapping"),
    (
        "wrong-scalar",
        "tools/x.yaml",
        "clientFunction: {name: 3}\n",
        "tools/x.yaml:1:24: clientFunction.name: must be text (got the number 3; quote it to keep it as text: '3')",
    ),
    (
        "unknown-snake",
        "tools/x.yaml",
        "open_api_tool: {openApiSchema: x}\n",
        "tools/x.yaml:1:1: unknown field 'open_api_tool' in Tool; did you mean 'openApiTool'?",
    ),
    ("unknown-typo", "tools/x.yaml", "clientFunction: {name: a, descripton: b}\n", "did you mean 'description'?"),
    (
        "output-only",
        "tools/x.yaml",
        "clientFunction: {name: a}\ncreateTime: x\n",
        "tools/x.yaml:2:1: 'createTime' is output only",
    ),
    ("no-type", "tools/x.yaml", "timeout: 3s\n", "exactly one of clientFunction"),
    ("two-types", "tools/x.yaml", "clientFunction: {name: a}\ngoogleSearchTool: {name: b}\n", "at most one of"),
    (
        "enum",
        "tools/x.yaml",
        "clientFunction: {name: a}\nexecutionType: LATER\n",
        "tools/x.yaml:2:16: executionType: 'LATER' is not a valid value (one of: EXECUTION_TYPE_UNSPECIFIED, SYNCHRONOUS, ASYNCHRONOUS)",
    ),
    ("duration", "tools/x.yaml", "clientFunction: {name: a}\ntimeout: 3 seconds\n", "a Duration is seconds"),
    (
        "duration-number",  # YAML reads `timeout: 5` as a number; the message says what to write
        "tools/x.yaml",
        "clientFunction: {name: a}\ntimeout: 5\n",
        "tools/x.yaml:2:10: timeout: a Duration is text with an 's' suffix: write '5s' for 5 seconds",
    ),
    (
        "connection",
        "toolsets/x.yaml",
        "connectorToolset: {connection: crm, connectorActions: [{connectionActionId: a}]}\n",
        "must be projects/{project}/locations/{location}/connections/{connection}",
    ),
    (
        "secret",
        "toolsets/x.yaml",
        'openApiToolset:\n  openApiSchema: "openapi: 3.0.0\\npaths: {/a: {get: {}}}"\n  apiAuthentication:\n    apiKeyConfig: {keyName: k, apiKeySecretVersion: mysecret, requestLocation: HEADER}\n',
        "projects/{project}/secrets/{secret}/versions/{version}",
    ),
    (
        "boost",
        "tools/x.yaml",
        "dataStoreTool:\n  name: d\n  boostSpecs: [{dataStores: [x], spec: [{conditionBoostSpecs: [{condition: c, boost: 2}]}]}]\n",
        "less than or equal to 1",
    ),
    (
        "grounding",
        "tools/x.yaml",
        "dataStoreTool:\n  name: d\n  modalityConfigs: [{modalityType: TEXT, groundingConfig: {groundingLevel: 9}}]\n",
        "less than or equal to 5",
    ),
    (
        "context-urls",
        "tools/x.yaml",
        "googleSearchTool:\n  name: g\n  contextUrls: [" + ",".join(f"u{i}" for i in range(21)) + "]\n",
        "at most 20 items",
    ),
    (
        "openapi-unparsable",
        "toolsets/x.yaml",
        "openApiToolset: {openApiSchema: '{nope: [}'}\n",
        "openApiSchema is not valid JSON or YAML",
    ),
    ("python-syntax", "tools/x.yaml", "pythonFunction:\n  pythonCode: |\n    def f(:\n      pass\n", "tools/x.yaml:3:"),
    (
        "python-missing-fn",
        "tools/x.yaml",
        "pythonFunction:\n  name: g\n  pythonCode: 'def f(): pass'\n",
        "defines no function 'g'",
    ),
    # Tool types CES makes itself (Terraform's google_ces_tool: output only): refused at the type's
    # key, with the toolset to write instead where one makes them.
    (
        "mcp-standalone",
        "tools/x.yaml",
        "mcpTool: {name: m, serverAddress: https://x}\n",
        "tools/x.yaml:1:1: mcpTool cannot be created or updated as a tool: CES makes MCP tools from an mcpToolset",
    ),
    (
        "openapi-standalone",
        "tools/x.yaml",
        "# a comment\nopenApiTool:\n  name: o\n  openApiSchema: {file: ../schemas/o.yaml}\n  url: ${URL}\n",
        "tools/x.yaml:2:1: openApiTool cannot be created or updated as a tool: CES makes OpenAPI tools from an "
        "openApiToolset, one per operation of its schema (Terraform's google_ces_tool marks openApiTool output only). "
        "Write it as toolsets/x.yaml (openApiTool.name has no place there: the server names the toolset's tools), "
        "and name it in an agent as toolsets: [{toolset: {ref: toolsets/x}}]; 'cesync convert-tools' does both:\n"
        "      openApiToolset:\n        openApiSchema: {file: ../schemas/o.yaml}\n        url: ${URL}",
    ),
    (
        "connector-standalone",
        "tools/x.yaml",
        "timeout: 3s\nconnectorTool:\n  connection: projects/p/locations/l/connections/c\n  action: {connectionActionId: a}\n",
        "tools/x.yaml:2:1: connectorTool cannot be created or updated as a tool: CES makes connector tools from a "
        "connectorToolset, one per action (Terraform's google_ces_tool marks connectorTool output only). Write it as "
        "toolsets/x.yaml, and name it in an agent as toolsets: [{toolset: {ref: toolsets/x}}]; 'cesync convert-tools' "
        "does both:\n      connectorToolset:\n        connection: projects/p/locations/l/connections/c\n"
        "        connectorActions:\n          - connectionActionId: a\n      timeout: 3s",
    ),
    (
        "system-standalone",
        "tools/x.yaml",
        "systemTool: {name: end_session}\n",
        "tools/x.yaml:1:1: systemTool cannot be created or updated as a tool: system tools come with every app "
        "(Terraform's google_ces_tool marks systemTool output only); remove this file",
    ),
    (
        "remote-agent-standalone",
        "tools/x.yaml",
        "remoteAgentTool: {name: r, agentCard: {name: R}}\n",
        "tools/x.yaml:1:1: remoteAgentTool cannot be created or updated as a tool: a remote agent (A2A) tool is "
        "configured outside the app's tools",
    ),
    (
        "include-missing",
        "tools/x.yaml",
        "pythonFunction: {pythonCode: {file: nope.py}}\n",
        "tools/x.yaml:1:37: file 'nope.py' does not exist",
    ),
    ("include-escape", "tools/x.yaml", "pythonFunction: {pythonCode: {file: ../../../etc/passwd}}\n", "is outside the repo"),
    ("non-utf8", "tools/x.yaml", b"clientFunction: {name: \xff}\n", "tools/x.yaml:1:24: not UTF-8"),
    ("binary", "tools/x.yaml", b"\x00\x01\x02", "binary file"),
    ("alias-bomb", "tools/x.yaml", BOMB, "alias bomb"),
    ("alias-text-bomb", "tools/x.yaml", TEXT_BOMB, "alias bomb"),
    ("duplicate-id", "tools/y.yaml", "id: greet\nclientFunction: {name: y}\n", "duplicate tool id 'greet'"),
    ("duplicate-name", "tools/y.yaml", "clientFunction: {name: greet}\n", "duplicate tool name 'greet'"),
    (
        "bad-ref",
        "tools/w.yaml",
        "widgetTool: {name: w, dataMapping: {sourceToolName: {ref: tools/gret}}}\n",
        "did you mean 'tools/greet'?",
    ),
    ("missing-var", "tools/x.yaml", "clientFunction: {name: '${NOPE}'}\n", "variable 'NOPE' is not set for environment 'local'"),
    (
        "env-var-no-url",
        "toolsets/x.yaml",
        'openApiToolset: {openApiSchema: "openapi: 3.0.0\\nservers: [{url: $env_var}]\\npaths: {/a: {get: {}}}"}\n',
        "uses $env_var but environment 'local' gives no url",
    ),
    ("server-set-name", "tools/x.yaml", "name: projects/x\nclientFunction: {name: a}\n", "'name' is set by the server"),
]


@pytest.mark.parametrize(("file", "content", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_positioned(tmp_path: Path, file: str, content: str | bytes, expected: str) -> None:
    repo = load_repo(make_repo(tmp_path, {file: content}))
    problems = repo.validate()
    assert any(expected in str(p) for p in problems), "\n".join(map(str, problems))
    assert all(p.line >= 1 and p.col >= 1 for p in problems)


def test_a_misspelt_variable_names_the_one_the_environment_has(tmp_path: Path) -> None:
    config = "version: 1\nenvironments:\n  local: {endpoint: embedded, project: p, location: us, app: a, vars: {GREETING: hi}}\n"
    files = {"cesync.yaml": config, "tools/x.yaml": "clientFunction: {name: x, description: '${GRETING}'}\n"}
    problems = [str(p) for p in load_repo(make_repo(tmp_path, files)).validate()]
    assert any(
        "variable 'GRETING' is not set for environment 'local'; did you mean 'GREETING'? (set it in" in p for p in problems
    ), problems


def test_a_folder_named_like_a_kind_is_a_warning_naming_the_kind(tmp_path: Path) -> None:
    # tool/x.yaml is read by nothing: without the warning it would simply not be part of the app
    files = {"tool/x.yaml": "clientFunction: {name: x}\n", "tool/y.yml": "clientFunction: {name: y}\n"}
    files |= {"docs/notes.yaml": "a: 1\n", "schemas/orders.yaml": "openapi: 3.0.0\n"}  # other folders may hold YAML
    repo = make_repo(tmp_path, files)
    lenient = cesync("validate", "--dir", str(repo))
    warning = (
        "tool/x.yaml:1:1: cesync reads no folder 'tool/', so its 2 YAML files are not part of the app; did you mean 'tools/'?"
    )
    assert lenient.returncode == 0 and warning in lenient.stderr, lenient.stderr
    assert "docs/" not in lenient.stderr and "schemas/" not in lenient.stderr
    strict = cesync("validate", "--dir", str(repo), "--strict")
    assert strict.returncode == 1 and warning in strict.stderr, strict.stderr
    assert "ok:" in lenient.stdout and "ok:" not in strict.stdout  # a run that fails does not say ok first


def test_huge_file(tmp_path: Path) -> None:
    repo = load_repo(make_repo(tmp_path, {"tools/x.yaml": "a: " + "x" * (6 * 1024 * 1024)}))
    assert any("the limit is" in str(p) for p in repo.validate())


def test_all_problems_reported_at_once(tmp_path: Path) -> None:
    repo = load_repo(make_repo(tmp_path, {"tools/a.yaml": "timeout: 3\nclientFunction: {name: a}\n", "tools/b.yaml": "x: 1\n"}))
    files = {p.file for p in repo.validate()}
    assert files == {"tools/a.yaml", "tools/b.yaml"}


def test_example_is_valid_for_every_environment() -> None:
    repo = load_repo(EXAMPLES / "support-bot")
    assert repo.validate() == []
    tools = [{r.key: r for r in repo.render(repo.env(e))}[("tool", "billing-agent")] for e in repo.env_names]
    urls = {t.body["agentTool"]["agent"] for t in tools}
    assert len(urls) == 4  # references resolve per environment


def test_includes_and_conveniences() -> None:
    repo = load_repo(EXAMPLES / "support-bot")
    desired = {d.id: d.body for d in repo.render(repo.env("prod"))}
    assert desired["refund-policy"]["pythonFunction"]["pythonCode"].startswith("def refund_policy(")
    schema = desired["orders"]["openApiToolset"]["openApiSchema"]
    assert "https://orders.acme.example" in schema and "$env_var" not in schema
    assert desired["orders"]["openApiToolset"]["url"] == "https://orders.acme.example"
    assert "https://catalog.acme.example" in desired["catalog"]["openApiToolset"]["openApiSchema"]
    assert desired["order-card"]["widgetTool"]["dataMapping"]["sourceToolName"] == (
        "projects/acme-support/locations/us/apps/support-bot/tools/order-status"
    )


def test_variables_escape_and_ces_syntax_untouched(tmp_path: Path) -> None:
    content = "clientFunction:\n  name: a\n  description: 'cost $${PRICE} for ${WHO} via $context.variables.x and $env_var'\n"
    cfg = "version: 1\nenvironments:\n  local: {endpoint: embedded, project: p, location: us, app: a, vars: {WHO: me}}\n"
    repo = load_repo(make_repo(tmp_path, {"tools/a.yaml": content, "cesync.yaml": cfg}))
    body = next(d.body for d in repo.render(repo.env("local")) if d.id == "a")
    assert body["clientFunction"]["description"] == "cost ${PRICE} for me via $context.variables.x and $env_var"


CATALOG = "openApiToolset:\n  openApiSchema:\n    openapi: 3.0.3\n    info: {title: C, version: '1'}\n    servers: [{url: $env_var}]\n    paths: {}\n"
URLS_CONFIG = (
    "version: 1\nenvironments:\n  local:\n    endpoint: embedded\n    project: p\n    location: us\n    app: a\n"
    "    vars: {STUB: 'http://127.0.0.1:8089'}\n    urls: {catalog: '%s'}\n"
)


@pytest.mark.parametrize(
    ("url", "environ", "expected"),
    [
        ("${STUB}/v1", {}, "http://127.0.0.1:8089/v1"),
        ("${STUB}/v1", {"CESYNC_VAR_STUB": "http://127.0.0.1:40123"}, "http://127.0.0.1:40123/v1"),  # a stub's own port
        ("http://h/$${STUB}", {}, "http://h/${STUB}"),
    ],
)
def test_an_environment_url_takes_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str, environ: dict[str, str], expected: str
) -> None:
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    repo = load_repo(make_repo(tmp_path, {"toolsets/catalog.yaml": CATALOG, "cesync.yaml": URLS_CONFIG % url}))
    env = repo.env("local")
    assert env.urls == {"catalog": expected}  # what export and pull compare with, too
    (catalog,) = [d for d in repo.render(env) if d.id == "catalog"]
    assert catalog.body["openApiToolset"]["url"] == expected


def test_an_environment_url_with_an_unset_variable_is_positioned(tmp_path: Path) -> None:
    repo = load_repo(make_repo(tmp_path, {"toolsets/catalog.yaml": CATALOG, "cesync.yaml": URLS_CONFIG % "${NOPE}"}))
    with pytest.raises(ConfigError) as raised:
        repo.env("local")
    assert [str(p) for p in raised.value.problems] == [
        "cesync.yaml:9:21: variable 'NOPE' is not set for environment 'local' (set it in environments.local.vars, "
        "defaults.vars, --var or the process environment as CESYNC_LOCAL_VAR_NOPE or CESYNC_VAR_NOPE; "
        "a plain NOPE is never read)"
    ]


def test_unknown_environment_lists_known(tmp_path: Path) -> None:
    repo = load_repo(make_repo(tmp_path, {}))
    with pytest.raises(ConfigError, match=r"unknown environment 'prod'.*known: local"):
        repo.env("prod")


# --- property: the loader returns data or positioned problems, never raises ------------------

yaml_text = st.text(alphabet=string.printable + "\u00e9\u4e2d\t", max_size=300)
structured = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda kids: (
        st.lists(kids, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                ["clientFunction", "name", "openApiTool", "timeout", "x", "pythonFunction", "pythonCode", "file", "ref"]
            ),
            kids,
            max_size=4,
        )
    ),
    max_leaves=20,
)


def _only_problems(tmp_path: Path, text: str) -> None:
    (tmp_path / "repo" / "tools" / "x.yaml").write_text(text, encoding="utf-8")
    repo = load_repo(tmp_path / "repo")
    for p in repo.validate():
        assert isinstance(p, Problem) and p.line >= 1 and p.col >= 1


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=yaml_text)
@example(text="._")  # ruamel.yaml resolves it as a float that float() refuses
@example(text="a: 0b_")  # an int, read past its end
@example(text="a: 2001-13-45")  # a date with no such month
def test_random_text_never_raises(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    tmp = tmp_path_factory.mktemp("h")
    make_repo(tmp, {})
    _only_problems(tmp, text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=structured)
def test_random_documents_never_raise(tmp_path_factory: pytest.TempPathFactory, data: object) -> None:
    import json

    tmp = tmp_path_factory.mktemp("h")
    make_repo(tmp, {})
    _only_problems(tmp, json.dumps({"clientFunction": data}) if not isinstance(data, dict) else json.dumps(data))


def test_load_text_positions() -> None:
    doc = load_text("a:\n  b: [1, {c: 2}]\n", "f.yaml")
    assert not isinstance(doc, Problem)
    assert doc.positions.at(("a", "b", 1, "c")) == (2, 14)
    assert doc.positions.at(("a", "b", 1, "c"), key=True) == (2, 11)


def test_lone_surrogate_escape_is_a_problem(tmp_path: Path) -> None:
    repo = load_repo(make_repo(tmp_path, {"tools/x.yaml": 'clientFunction: {name: "\\ud800"}\n'}))
    assert any("tools/x.yaml:1:" in str(p) and "surrogate" in str(p) for p in repo.validate())


def test_references_inside_lists(tmp_path: Path) -> None:
    files = {"tools/s.yaml": "googleSearchTool: {name: s, contextUrls: [https://a.example, {ref: versions/help}]}\n"}
    repo = load_repo(make_repo(tmp_path, files))
    [_, s] = sorted(repo.render(repo.env("local")), key=lambda d: d.id)
    assert s.body["googleSearchTool"]["contextUrls"] == ["https://a.example", "projects/p/locations/us/apps/a/versions/help"]


def test_the_draft_version_ref(tmp_path: Path) -> None:
    files = {"deployments/web.yaml": "displayName: W\nappVersion: {ref: versions/-}\nchannelProfile: {channelType: WEB_UI}\n"}
    repo = load_repo(make_repo(tmp_path, files))
    assert not repo.validate()
    web = next(d for d in repo.render(repo.env("local")) if d.kind.name == "deployment")
    assert web.body["appVersion"] == "projects/p/locations/us/apps/a/versions/-"
    files["deployments/web.yaml"] = files["deployments/web.yaml"].replace("versions/-", "versions/-x-")
    [problem] = load_repo(make_repo(tmp_path / "bad", files)).validate()
    assert "deployments/web.yaml:2:19:" in str(problem) and "versions/- (the draft app)" in str(problem)


SYMLINKS = [
    # (link inside the repo, target relative to the folder outside it, what to load, expected problem file)
    ("tools/evil.yaml", "secret.yaml", "repo", "tools/evil.yaml"),
    ("toolsets", ".", "repo", "toolsets/secret.yaml"),  # a whole folder linked out
    ("cesync.yaml", "secret.yaml", "repo", "cesync.yaml"),
    ("tests/evil.yaml", "secret.yaml", "tests", "tests/evil.yaml"),
]


@pytest.mark.parametrize(("link", "target", "what", "expected"), SYMLINKS, ids=[s[0] for s in SYMLINKS])
def test_files_resolving_outside_the_repo_are_refused(tmp_path: Path, link: str, target: str, what: str, expected: str) -> None:
    from cesync.tooltests import load_tests

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.yaml").write_text("clientFunction: {name: secret}\n")
    root = make_repo(tmp_path, {})
    (root / link).unlink(missing_ok=True)
    (root / link).parent.mkdir(parents=True, exist_ok=True)
    (root / link).symlink_to(outside / target)
    with pytest.raises(ConfigError) as info:
        repo = load_repo(root) if what == "repo" else None
        if repo is not None:
            repo.render(repo.env("local"))
        else:
            load_tests(root)
    assert any(p.file == expected and "resolves outside the repo" in p.message for p in info.value.problems), info.value


def test_symlink_inside_the_repo_is_fine(tmp_path: Path) -> None:
    root = make_repo(tmp_path, {"shared/other.yaml": "clientFunction: {name: other}\n"})
    (root / "tools" / "other.yaml").symlink_to(root / "shared" / "other.yaml")
    repo = load_repo(root)
    assert {d.id for d in repo.render(repo.env("local"))} == {"greet", "other"}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            "clientFunction: {name: f}\nexecutionType: synchronous\n",
            ["tools/t.yaml:2:16: executionType: 'synchronous' is not a valid value; did you mean 'SYNCHRONOUS'?"],
        ),
        (
            "clientFunction:\n  name: f\n  parameters: {type: OBJEC}\n",
            ["clientFunction.parameters.type: 'OBJEC' is not a valid value; did you mean 'OBJECT'? (one of: "],
        ),
        ("googleSearchTool:\n  nme: web\n", ["tools/t.yaml:2:3: unknown field 'nme' in GoogleSearchTool; did you mean 'name'?"]),
        (
            "clientFunction:\n  name: f\n  parameters:\n    type: OBJECT\n    properties: {a: {tpe: STRING}}\n",
            ["unknown field 'tpe' in Schema; did you mean 'type'?"],
        ),
        (
            "pythonFunctin:\n  name: web\n",
            ["tools/t.yaml:1:1: unknown field 'pythonFunctin' in Tool; did you mean 'pythonFunction'?"],
        ),
    ],
    ids=["enum", "nested-enum", "nested-key", "deep-key", "type-key"],
)
def test_one_clear_problem_per_mistake(tmp_path: Path, content: str, expected: list[str]) -> None:
    """A misspelt key is one problem with a suggestion (no second 'missing required field'); enums name the closest value."""
    root = make_repo(tmp_path, {"tools/t.yaml": content})
    problems = load_repo(root).validate()
    assert len(problems) == len(expected), problems
    for problem, want in zip(problems, expected, strict=True):
        assert want in str(problem)
    assert not any("missing required" in p.message or "exactly one of" in p.message for p in problems)


WRITTEN_NAMES = {
    # (what the resource-name field holds, what validate says there)
    "a bare kind/id": ("tools/greet", "is not a resource name: CES takes a full name here; write {ref: tools/greet}"),
    "a bare id": ("greet", "is not a resource name: CES takes a full name here; write {ref: tools/greet}"),
    "an unknown id": ("projects/p/locations/us/apps/a/tools/nope", "no tool of this repo; write {ref: tools/nope}"),
    "another app's name": ("projects/p/locations/us/apps/b/tools/greet", "a resource of another app"),
    "a name of the wrong kind": ("projects/p/locations/us/apps/a/agents/x", "not one of this app's tools"),
}


@pytest.mark.parametrize(("value", "expected"), WRITTEN_NAMES.values(), ids=list(WRITTEN_NAMES))
def test_a_resource_name_field_written_as_text_is_checked_where_it_stands(tmp_path: Path, value: str, expected: str) -> None:
    """Agent.tools holds tool names (google.api.resource_reference): a forgotten {ref:} is a problem at file:line:col."""
    agent = f"displayName: A\nllmAgent: {{}}\ntools:\n  - {{ref: tools/greet}}\n  - {value}\n"
    [problem] = load_repo(make_repo(tmp_path, {"agents/a.yaml": agent})).validate()
    assert str(problem).startswith("agents/a.yaml:5:5: tools ") and expected in str(problem), str(problem)


def test_a_full_name_of_the_repos_own_resource_is_accepted(tmp_path: Path) -> None:
    agent = "displayName: A\nllmAgent: {}\ntools: [projects/p/locations/us/apps/a/tools/greet]\n"
    assert not load_repo(make_repo(tmp_path, {"agents/a.yaml": agent})).validate()


RESOURCE_FILES = sorted(
    str(p.relative_to(EXAMPLES / "support-bot"))
    for p in (EXAMPLES / "support-bot").glob("*/*.yaml")
    if p.parent.name not in ("schemas", "tests", "policies", "releases")  # not resources: read by their own loaders
)


@pytest.mark.parametrize("file", RESOURCE_FILES)
def test_one_broken_file_is_one_problem(tmp_path: Path, file: str) -> None:
    """A file that does not parse is reported alone: references to it are not problems too (issue #38, finding 7)."""
    root = tmp_path / "bot"
    shutil.copytree(EXAMPLES / "support-bot", root)
    broken = root / file
    broken.write_text(broken.read_text() + "\tdescription: indented with a tab\n")
    problems = load_repo(root).validate()
    assert [p.file for p in problems] == [file], problems


def test_an_unparsable_file_keeps_its_own_id_known(tmp_path: Path) -> None:
    """An agent whose file is broken is still named by other files: one problem, in that file."""
    root = tmp_path / "bot"
    shutil.copytree(EXAMPLES / "support-bot", root)
    (root / "agents" / "support.yaml").write_text("displayName: x\n  instruction: y\n")
    problems = load_repo(root).validate()
    assert len(problems) == 1 and problems[0].file == "agents/support.yaml", problems


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(string.ascii_letters + string.digits + " =()'\"#", max_size=30), min_size=1, max_size=5))
def test_a_crlf_checkout_renders_as_an_lf_one(tmp_path_factory: pytest.TempPathFactory, lines: list[str]) -> None:
    """git's autocrlf turns an included .py file's endings to CRLF: the body sent is the same (issue #38, finding 3)."""
    bodies = []
    for ending in ("\n", "\r\n"):
        root = tmp_path_factory.mktemp("crlf") / "repo"
        shutil.copytree(FIXTURES / "pull", root)
        (root / "code" / "greet.py").write_bytes(
            ending.join(["def greet():", *(f"    # {x}" for x in lines), "    return 1", ""]).encode()
        )
        repo = load_repo(root)
        [tool] = [r for r in repo.render(repo.env("local")) if r.key == ("tool", "greet")]
        bodies.append(tool.body)
    assert bodies[0] == bodies[1]


@settings(max_examples=20, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.from_regex(r"[A-Z][A-Z0-9_]{0,12}", fullmatch=True),
    where=st.sampled_from(["servers", "title", "summary"]),
)
def test_a_variable_in_an_included_openapi_file_is_a_problem_where_it_stands(
    tmp_path_factory: pytest.TempPathFactory, name: str, where: str
) -> None:
    """${NAME} in an included OpenAPI document would reach CES literally: validate says so at its line (finding 4)."""
    root = tmp_path_factory.mktemp("var") / "repo"
    shutil.copytree(FIXTURES / "pull", root)
    schema = root / "schemas" / "weather.yaml"
    old = {"servers": "$env_var", "title": "Weather", "summary": "operationId: now"}[where]
    text = schema.read_text()
    new = f"operationId: now\n      summary: at ${{{name}}}" if where == "summary" else f"${{{name}}}"
    text = text.replace(old, new, 1)
    schema.write_text(text)
    line = next(i for i, x in enumerate(text.splitlines(), 1) if "${" in x)
    problems = load_repo(root).validate()
    assert [(p.file, p.line) for p in problems] == [("schemas/weather.yaml", line)], problems
    assert f"'${{{name}}}' would reach CES as written" in problems[0].message


@pytest.mark.parametrize(
    ("written", "said"),
    [
        (
            "guardrails: {ref: guardrails/no-card-numbers}",
            "guardrails: must be a list (got one {ref: guardrails/no-card-numbers}",
        ),
        ("childAgents: {a: b}", "childAgents: must be a list (got a mapping)"),
        ("tools: text", "tools: must be a list (got a string)"),
    ],
)
def test_a_list_field_says_what_the_file_holds(tmp_path: Path, written: str, said: str) -> None:
    """A {ref:} where a list belongs was 'got a string' (what templating made of it): finding 8."""
    root = tmp_path / "bot"
    shutil.copytree(EXAMPLES / "support-bot", root)
    billing = root / "agents" / "billing.yaml"
    key = written.split(":")[0]
    kept = [line for line in billing.read_text().splitlines() if not line.startswith((f"{key}:", "  - "))]
    billing.write_text("\n".join([*kept, written]) + "\n")
    problems = [str(p) for p in load_repo(root).validate() if p.file == "agents/billing.yaml"]
    assert any(said in p for p in problems), problems


def test_resolving_an_environment_registers_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Repo.env and the value lookups only resolve: the repo holds no scrubber, and the pipeline
    tells the run's scrubber itself (pipeline.masking.remember_sensitive)."""
    import cesync.repo.repo as repo_module

    config = "version: 1\ndefaults:\n  sensitive: [API_KEY]\nenvironments:\n  local: {endpoint: embedded, project: p, location: us, app: a}\n"
    root = make_repo(tmp_path, {"cesync.yaml": config})
    monkeypatch.setenv("CESYNC_VAR_API_KEY", "sk-resolve-only-1234")
    repo = load_repo(root)
    env = repo.env("local")
    assert repo.sensitive_values(env) == {"API_KEY": "sk-resolve-only-1234"}
    assert repo.every_sensitive_value() == ["sk-resolve-only-1234"]
    assert not any("scrubber" in name.lower() or "scrub" in name for name in [*vars(repo_module), *dir(repo)])


@pytest.mark.parametrize("written", ["${", '${", "x": "y"}', "${a b}", "costs ${ 5", "$${ESCAPED}", "${1X}"])
def test_text_that_is_no_reference_in_an_included_openapi_file_is_no_problem(tmp_path: Path, written: str) -> None:
    """Only ${NAME} is a reference someone meant to be substituted: "${" followed by other text (a
    title typed in the console, pulled into the include as it is) reaches CES as written, as meant."""
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "pull", root)
    schema = root / "schemas" / "weather.yaml"
    schema.write_text(schema.read_text().replace("Weather", json.dumps(written), 1))
    assert load_repo(root).validate() == []


@pytest.mark.parametrize("stray", ['"${"', '"costs ${ 5"', '"${a b"'])
def test_a_reference_after_stray_text_in_an_included_openapi_file_is_still_a_problem(tmp_path: Path, stray: str) -> None:
    """A "${" typed into the title runs, as a reference's span, up to the next "}": the ${NAME} in
    the server URL after it is still found, at its own line."""
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "pull", root)
    schema = root / "schemas" / "weather.yaml"
    text = schema.read_text().replace("Weather", stray, 1).replace("$env_var", "${API_BASE}/v1", 1)
    schema.write_text(text)
    line = next(i for i, x in enumerate(text.splitlines(), 1) if "${API_BASE}" in x)
    problems = load_repo(root).validate()
    assert [(p.file, p.line) for p in problems] == [("schemas/weather.yaml", line)], problems
    assert "'${API_BASE}' would reach CES as written" in problems[0].message
