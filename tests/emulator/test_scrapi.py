"""Google's cxas-scrapi against the emulator: its clients, its tool-test runner, `cxas pull` and `cxas push`.

scrapi talks to ``https://$CES_API_ENDPOINT`` (the v1beta REST surface with
``CES_TRANSPORT=rest``), so the emulator serves TLS here with a certificate made for
the test, which scrapi's ``requests`` trusts through ``REQUESTS_CA_BUNDLE``. scrapi
reads its endpoint when it is imported, so each scrapi run is a process of its own.
A second, plain-HTTP emulator shares the state file, for cesync and for setup.

cxas-scrapi is the ``scrapi`` extra, not ``test``: without it these tests are skipped,
except in CI (``CI=true``), where .ci/run installs it in a virtualenv of its own and a
missing cxas-scrapi fails them.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from cesync.cli import main
from cesync.client import connect
from cesync.core.scrubber import Scrubber
from cesync.emulator.server import BackgroundServer
from cesync.pipeline.toolnames import tool_names
from cesync.repo.repo import load_repo

from ..conftest import EXAMPLES
from ..google_fake import self_signed

pytestmark = pytest.mark.scrapi

LOCATION = "projects/p/locations/us"


@pytest.fixture(scope="module", autouse=True)
def _scrapi_installed() -> None:
    if importlib.util.find_spec("cxas_scrapi") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("cxas-scrapi is not installed: CI runs these tests where it is (pip install -e '.[test,scrapi]')")
        pytest.skip("cxas-scrapi is not installed (pip install -e '.[scrapi]')")


EXAMPLE_APP = "projects/local/locations/us/apps/support-bot"


@dataclass
class Pair:
    plain: BackgroundServer
    tls: BackgroundServer
    ca: Path


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    folder = tmp_path_factory.mktemp("scrapi")
    cert, key = self_signed(folder)
    state = folder / "state.db"
    settings: dict[str, Any] = {"auto_create_apps": False, "operation_delay": 0.3}
    with (
        BackgroundServer(state, apps=[EXAMPLE_APP], **settings) as plain,
        BackgroundServer(state, tls=(cert, key), **settings) as tls,
    ):
        yield Pair(plain, tls, cert)


def scrapi(pair: Pair, code: str, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run Python code that uses scrapi (or scrapi's CLI, with argv) against the TLS emulator."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CES_", "GOOGLE_", "CESYNC_"))}
    env.update(
        CES_API_ENDPOINT=pair.tls.host,
        CES_TRANSPORT="rest",
        CXAS_OAUTH_TOKEN="emulator-token",  # scrapi's own way to skip Google's credential discovery
        REQUESTS_CA_BUNDLE=str(pair.ca),
    )
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *argv],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
    )


def _last_json(run: subprocess.CompletedProcess[str]) -> Any:
    assert run.returncode == 0, run.stdout + run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


def cesync(*args: str) -> Any:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result


def test_scrapi_clients(pair: Pair) -> None:
    """Apps, tools, execute_tool (with the app's variables from GetApp), tool schemas, agents, guardrails."""
    code = """
        import json, sys
        from cxas_scrapi.core.agents import Agents
        from cxas_scrapi.core.apps import Apps
        from cxas_scrapi.core.guardrails import Guardrails
        from cxas_scrapi.core.tools import Tools
        from cxas_scrapi.core.variables import Variables

        out = {}
        apps = Apps(project_id="p", location="us")
        app = apps.create_app(app_id="clients", display_name="Clients")  # an operation, polled
        out["created"] = app.name
        out["listed"] = [a.name for a in apps.list_apps()]
        declared = [{"name": "tier", "description": "tier", "schema": {"type_": "STRING", "default": "gold"}}]
        out["updated"] = apps.update_app(app.name, variable_declarations=declared).variable_declarations[0].name
        out["variables"] = [v.name for v in Variables(app_name=app.name).list_variables()]

        tools = Tools(app_name=app.name)
        code = (
            "def refund(order_total: float, days: int = 0) -> dict:\\n"
            "    \\"\\"\\"Decide.\\"\\"\\"\\n"
            "    return {'eligible': days <= 30, 'tier': context.variables.get('tier')}\\n"
        )
        tool = tools.create_tool(tool_id="refund", display_name="refund", payload={"python_code": code})
        out["tools"] = tools.get_tools_map(reverse=True)
        out["executed"] = tools.execute_tool("refund", args={"order_total": 5})  # no variables: the app's
        out["executed_with"] = tools.execute_tool("refund", args={"order_total": 5}, variables={"tier": "tin"})
        schema = tools.retrieve_tool_schema(tool.name)
        out["schema"] = {"required": list(schema.input_schema.required), "props": sorted(schema.input_schema.properties)}

        agents = Agents(app_name=app.name)
        agent = agents.create_agent(display_name="Root", agent_id="root", instruction="Help.", tools=[tool.name])
        out["agent"] = [agent.name, list(agent.tools)]
        out["agent_updated"] = agents.update_agent(agent.name, instruction="Help more.").instruction
        guardrails = Guardrails(app_name=app.name)
        guardrails.create_guardrail(
            "no-pii", "No PII",
            {"content_filter": {"banned_contents": ["ssn"], "match_type": "SIMPLE_STRING_MATCH"}},
            action={"respond_immediately": {"responses": [{"text": "I cannot help with that."}]}},
        )
        out["guardrails"] = guardrails.get_guardrails_map()
        out["root"] = apps.update_app(app.name, root_agent=agent.name).root_agent
        try:
            tools.delete_tool(tool.name)
        except Exception as exc:  # the agent still lists it
            out["refused"] = type(exc).__name__ + ": " + str(exc)
        print(json.dumps(out))
    """
    out = _last_json(scrapi(pair, code))
    app = f"{LOCATION}/apps/clients"
    assert out["created"] == app and app in out["listed"]
    assert out["updated"] == "tier" and out["variables"] == ["tier"]
    assert out["tools"] == {"refund": f"{app}/tools/refund"}
    assert out["executed"]["response"] == {"result": {"eligible": True, "tier": "gold"}}
    assert out["executed_with"]["response"]["result"]["tier"] == "tin"
    assert out["schema"] == {"required": ["order_total"], "props": ["days", "order_total"]}
    assert out["agent"] == [f"{app}/agents/root", [f"{app}/tools/refund"]]
    assert out["agent_updated"] == "Help more."
    assert out["guardrails"] == {f"{app}/guardrails/no-pii": "No PII"}
    assert out["root"] == f"{app}/agents/root"
    assert out["refused"].startswith("BadRequest: 400") and "is referenced by agent(s) root" in out["refused"]


# --- tool tests: scrapi's runner and `cesync test` read the same file alike ----------------------------

RUN_TESTS = """
    import json, sys
    from cxas_scrapi.evals.tool_evals import ToolEvals
    evals = ToolEvals(app_name=sys.argv[1])
    cases = evals.load_tool_test_cases_from_file(sys.argv[2])
    frame = evals.run_tool_tests(cases)
    print(json.dumps({row["test_name"]: [row["status"], row["errors"]] for row in frame.to_dict("records")}))
"""


def _cesync_test(root: Path, endpoint: str, name: str) -> dict[str, str]:
    result = cesync("test", f"*{name}*", "--dir", str(root), "--env", "local", "--endpoint", endpoint, "--format", "json")
    data = json.loads(result.output)
    return {t["name"]: t["status"].upper() for t in data["tests"]}


@pytest.fixture(scope="module")
def example(pair: Pair, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("example") / "support-bot"
    shutil.copytree(EXAMPLES / "support-bot", root)
    applied = cesync("apply", "--dir", str(root), "--env", "local", "--endpoint", pair.plain.url, "--auto-approve")
    assert applied.exit_code == 0, applied.output
    return root


def test_the_examples_scrapi_file_passes_under_both(pair: Pair, example: Path) -> None:
    path = example / "tests" / "scrapi_refund.yaml"
    by_scrapi = _last_json(scrapi(pair, RUN_TESTS, EXAMPLE_APP, str(path)))
    by_cesync = _cesync_test(example, pair.plain.url, "scrapi_refund")
    assert (
        {k: v[0] for k, v in by_scrapi.items()}
        == by_cesync
        == {
            "refund_policy_in_window": "PASSED",
            "refund_policy_after_the_window": "PASSED",
        }
    )


def test_toolset_tools_go_by_the_names_scrapi_gives_them(pair: Pair, example: Path) -> None:
    code = "import json, sys\nfrom cxas_scrapi.core.tools import Tools\n"
    code += "print(json.dumps(Tools(app_name=sys.argv[1]).get_tools_map(reverse=True)))\n"
    by_scrapi = _last_json(scrapi(pair, code, EXAMPLE_APP))
    repo = load_repo(example, resources=False)
    env = repo.env("local")

    async def names() -> dict[str, str]:
        async with connect(env, repo.root, override=pair.plain.url, scrubber=Scrubber()) as client:
            return await tool_names(client, env.parent)

    by_cesync = asyncio.run(names())
    toolset_tools = {k: v for k, v in by_scrapi.items() if "/toolsets/catalog/" in v}  # the OpenAPI toolset
    assert set(toolset_tools) == {"catalog_listProducts", "catalog_getProduct"}
    for alias, name in toolset_tools.items():
        toolset, _, tool = name.rpartition("/tools/")
        assert by_cesync[alias] == f"{toolset.rsplit('/', 1)[1]}/{tool}"


OLD_FILE = """\
tests:
  - name: order_status_sets_variable
    tool: order_status
    args: {order_id: Z1}
    mockConfig:
      mockedToolCalls:
        - toolId: lookup_order
          expectedArgsPattern: {}
          mockResponse: {status: lost}
      unmatchedToolCallBehavior: FAIL
    expectations:
      response:
        - {path: $.result.message, operator: contains, value: lost}
"""


def test_a_mock_in_scrapis_format_is_refused_because_scrapi_ignores_it(pair: Pair, example: Path) -> None:
    """The example's file used to carry this test: `cesync test` passed it, scrapi failed it (no mock sent)."""
    path = example / "tests" / "scrapi_mock.yaml"
    path.write_text(OLD_FILE)
    try:
        by_scrapi = _last_json(scrapi(pair, RUN_TESTS, EXAMPLE_APP, str(path)))
        status, errors = by_scrapi["order_status_sets_variable"]
        assert status == "FAILED" and "path='$.result.message'" in errors  # the real lookup_order ran, unmocked
        refused = cesync("test", "--dir", str(example), "--env", "local", "--endpoint", pair.plain.url)
        assert refused.exit_code != 0
        assert "tests/scrapi_mock.yaml:5:5: cxas-scrapi's tool tests have no mockConfig" in refused.output
    finally:
        path.unlink()


VARIABLES_TOOL = """\
pythonFunction:
  name: tiers
  pythonCode: |
    def tiers(x: int = 0) -> dict:
        \"\"\"Shows the variables it was given.\"\"\"
        v = context.variables
        return {"tier": v.get("tier"), "region": v.get("region"), "n": len(v), "x": x}
"""
VARIABLES_TESTS = """\
tests:
  - name: no variables takes every app default
    tool: tiers
    expectations:
      response:
        - {path: $.result.tier, operator: equals, value: gold}
        - {path: $.result.n, operator: equals, value: 2}
  - name: a list of names takes those app values
    tool: tiers
    variables: [tier]
    expectations:
      response:
        - {path: $.result.tier, operator: equals, value: gold}
        - {path: $.result.n, operator: equals, value: 1}
  - name: a null value takes the app value, a given one wins
    tool: tiers
    agrs: {x: 1}
    variables: {tier: null, region: emea}
    expectations:
      response:
        - {path: $.result.tier, operator: equals, value: gold}
        - {path: $.result.region, operator: equals, value: emea}
      variables:
        - {path: $.region, operator: equals, value: emea}
  - name: a variable without a default is an empty object
    tool: tiers
    variables: [region]
    expectations:
      response:
        - {path: $.result.region, operator: length_equals, value: 0}
  - name: a name the app lacks falls back to every app default
    tool: tiers
    variables: [nope]
    expectations:
      response:
        - {path: $.result.n, operator: equals, value: 2}
  - name: values are YAML 1.1 as scrapi reads them (012 is octal, yes is true)
    tool: tiers
    args: {x: 012}
    expectations:
      response:
        - {path: $.result.x, operator: equals, value: 10}
        - {path: $.result.x, operator: greater_than, value: no}
  - name: an expectation that fails in both
    tool: tiers
    expectations:
      response:
        - {path: $.result.tier, operator: equals, value: silver}
"""


def test_variables_mean_the_same_in_both(pair: Pair, tmp_path: Path) -> None:
    app = f"{LOCATION}/apps/variables"
    root = tmp_path / "repo"
    (root / "tools").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "cesync.yaml").write_text(
        "version: 1\nenvironments:\n  local:\n    endpoint: embedded\n    project: p\n    location: us\n    app: variables\n"
    )
    (root / "tools" / "tiers.yaml").write_text(VARIABLES_TOOL)
    (root / "tests" / "variables.yaml").write_text(VARIABLES_TESTS)
    with httpx.Client(base_url=pair.plain.url) as h:
        h.post("/admin/apps", json={"name": app}).raise_for_status()
        declarations = [
            {"name": "tier", "description": "customer tier", "schema": {"type": "STRING", "default": "gold"}},
            {"name": "region", "description": "no default", "schema": {"type": "STRING"}},
        ]
        r = h.patch(f"/v1/{app}", params={"updateMask": "variableDeclarations"}, json={"variableDeclarations": declarations})
        assert r.status_code == 200, r.text
    applied = cesync("apply", "--dir", str(root), "--env", "local", "--endpoint", pair.plain.url, "--auto-approve")
    assert applied.exit_code == 0, applied.output
    by_scrapi = {k: v[0] for k, v in _last_json(scrapi(pair, RUN_TESTS, app, str(root / "tests" / "variables.yaml"))).items()}
    by_cesync = _cesync_test(root, pair.plain.url, "variables")
    assert by_scrapi == by_cesync
    assert by_cesync.pop("an expectation that fails in both") == "FAILED"
    assert set(by_cesync.values()) == {"PASSED"}


# --- cxas pull (exportApp) and cxas push (importApp) ----------------------------------------------------


def test_cxas_pull_and_push(pair: Pair, example: Path, tmp_path: Path) -> None:
    cli = "import sys\nfrom cxas_scrapi.cli.main import main\nsys.argv[0] = 'cxas'\nmain()\n"
    pulled = scrapi(pair, cli, "pull", EXAMPLE_APP, "--target-dir", str(tmp_path / "pulled"))
    assert pulled.returncode == 0 and "Successfully pulled app." in pulled.stdout, pulled.stdout + pulled.stderr
    app_dir = tmp_path / "pulled" / "support-bot"
    assert (app_dir / "app.json").is_file() and (app_dir / "tools" / "refund-policy" / "refund-policy.json").is_file()
    code = (app_dir / "tools" / "refund-policy" / "python_function" / "python_code.py").read_text()
    assert code == (EXAMPLES / "support-bot" / "code" / "refund_policy.py").read_text()

    # what cxas pulled, cesync imports (import-archive) and plans empty against the same app
    imported = cesync("import-archive", str(app_dir), "--out", str(tmp_path / "repo"), "--app", EXAMPLE_APP)
    assert imported.exit_code == 0, imported.output
    plan = cesync("plan", "--dir", str(tmp_path / "repo"), "--endpoint", pair.plain.url, "--detailed-exitcode")
    assert plan.exit_code == 0, plan.output

    # push it as a new app, then into an existing one (importApp; REPLACE, then OVERWRITE)
    (app_dir / "app.json").write_text(json.dumps({**json.loads((app_dir / "app.json").read_text()), "description": "pushed"}))
    pushed = scrapi(
        pair, cli, "push", "--app-dir", str(app_dir), "--project-id", "p", "--location", "us", "--display-name", "Pushed"
    )
    assert pushed.returncode == 0 and "Successfully pushed" in pushed.stdout, pushed.stdout + pushed.stderr
    new_app = pushed.stdout.rsplit("Successfully pushed: ", 1)[1].split()[0]
    with httpx.Client(base_url=pair.plain.url) as h:
        app = h.get(f"/v1/{new_app}").json()
        assert app["displayName"] == "Pushed" and app["description"] == "pushed"
        tools = {t["name"].rsplit("/", 1)[1] for t in h.get(f"/v1/{new_app}/tools", params={"pageSize": 100}).json()["tools"]}
        assert {"refund-policy", "order-status", "order-card"} <= tools
        toolsets = {t["name"].rsplit("/", 1)[1] for t in h.get(f"/v1/{new_app}/toolsets").json()["toolsets"]}
        assert {"orders", "catalog", "crm"} <= toolsets
    again = scrapi(
        pair, cli, "push", "--app-dir", str(app_dir), "--to", new_app, "--overwrite", "--create-version", "--version-name", "v1"
    )
    assert again.returncode == 0 and f"Successfully pushed to: {new_app}" in again.stdout, again.stdout + again.stderr
    assert "Created app version" in again.stdout and "with display name v1" in again.stdout
    versioned = scrapi(pair, cli, "pull", new_app, "--version-id", "v1", "--target-dir", str(tmp_path / "v1"))
    assert versioned.returncode == 0, versioned.stdout + versioned.stderr
    top = new_app.rsplit("/", 1)[1]
    assert json.loads((tmp_path / "v1" / top / "app.json").read_text())["description"] == "pushed"  # the version's snapshot

    broken = app_dir / "tools" / "refund-policy" / "refund-policy.json"
    broken.write_text(json.dumps({**json.loads(broken.read_text()), "bogusField": 1}))
    rejected = scrapi(pair, cli, "push", "--app-dir", str(app_dir), "--to", new_app)
    assert rejected.returncode == 1 and "tools/refund-policy" in rejected.stderr  # scrapi reports the warning


def test_v1beta_operations_name_v1beta_types(pair: Pair) -> None:
    with httpx.Client(base_url=pair.plain.url) as h:
        op = h.post(f"/v1beta/{LOCATION}/apps", params={"appId": "beta"}, json={"displayName": "Beta", "evaluationSettings": {}})
        assert op.status_code == 200, op.text
        assert op.json()["metadata"]["@type"] == "type.googleapis.com/google.cloud.ces.v1beta.OperationMetadata"
        export = h.post(f"/v1beta/{EXAMPLE_APP}:exportApp", json={"exportFormat": "YAML"}).json()
        assert export["done"] is False  # the archive itself is checked through cxas pull above
