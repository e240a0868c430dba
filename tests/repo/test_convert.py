"""cesync convert-tools: tool files of types CES makes only from toolsets become toolset files."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from cesync.cli import main
from cesync.repo.repo import load_repo
from tests.conftest import EXAMPLES

LOOKUP = """# yaml-language-server: $schema=../../../schemas/tool.schema.json
# An OpenAPI tool: each environment gives the server URL through ${ORDERS_URL}.
openApiTool:
  openApiSchema: {file: ../schemas/orders.yaml}   # the include stays
  name: lookup_order
  description: Look up an order by its number.
  url: ${ORDERS_URL}
timeout: 10s
"""
CRM = """connectorTool:
  connection: projects/acme-support/locations/us-central1/connections/crm
  action:
    entityOperation: {entityId: Contact, operation: GET}
  name: crm_contact
  description: Read a contact from the CRM.
"""
MCP = "mcpTool: {name: m, serverAddress: https://mcp.example/x}\n"
SYSTEM = "systemTool: {name: end_session}\n"


def _repo(tmp_path: Path, extra: dict[str, str]) -> Path:
    root = tmp_path / "bot"
    shutil.copytree(EXAMPLES / "support-bot", root, ignore=shutil.ignore_patterns(".cesync"))
    (root / "toolsets" / "orders.yaml").unlink()
    (root / "tests" / "orders_api.yaml").unlink()  # it names the orders toolset
    for rel, text in extra.items():
        (root / rel).write_text(text)
    agent = root / "agents" / "support.yaml"
    text = agent.read_text().replace("  - toolset: {ref: toolsets/orders}\n    toolIds: [getOrder]\n", "")
    agent.write_text(text.replace("tools:\n", "tools:\n  - {ref: tools/lookup-order}  # orders\n", 1))
    return root


def test_convert_tools_writes_toolsets_that_validate_and_render_per_environment(tmp_path: Path) -> None:
    root = _repo(tmp_path, {"tools/lookup-order.yaml": LOOKUP, "tools/crm-contact.yaml": CRM, "tools/docs.yaml": MCP})
    before = CliRunner().invoke(main, ["validate", "--dir", str(root)])
    assert before.exit_code == 1 and "tools/lookup-order.yaml:3:1: openApiTool cannot be created" in before.output

    dry = CliRunner().invoke(main, ["convert-tools", "--dir", str(root), "--dry-run"])
    assert dry.exit_code == 0 and "3 tool files to convert" in dry.output and (root / "tools" / "lookup-order.yaml").exists()

    r = CliRunner().invoke(main, ["convert-tools", "--dir", str(root)])
    assert r.exit_code == 0, r.output
    assert "converted tools/lookup-order.yaml -> toolsets/lookup-order.yaml (openApiTool -> openApiToolset)" in r.output
    assert not (root / "tools" / "lookup-order.yaml").exists()
    toolset = (root / "toolsets" / "lookup-order.yaml").read_text()
    assert toolset == (
        "# yaml-language-server: $schema=../../../schemas/toolset.schema.json\n"
        "# An OpenAPI tool: each environment gives the server URL through ${ORDERS_URL}.\n"
        "openApiToolset:\n"
        "  openApiSchema: {file: ../schemas/orders.yaml}   # the include stays\n"
        "  url: ${ORDERS_URL}\n"
        "description: Look up an order by its number.\n"
        "timeout: 10s\n"
    )
    crm = (root / "toolsets" / "crm-contact.yaml").read_text()
    assert "connectorToolset:\n" in crm and "  connectorActions:\n    - entityOperation: {entityId: Contact" in crm
    agent = (root / "agents" / "support.yaml").read_text()
    assert "tools/lookup-order" not in agent and "  - toolset: {ref: toolsets/lookup-order}\n" in agent

    assert CliRunner().invoke(main, ["validate", "--dir", str(root)]).exit_code == 0
    repo = load_repo(root)
    for env, url in (("prod", "https://orders.acme.example"), ("dev", "https://orders.dev.acme.example")):
        body = {r.key: r.body for r in repo.render(repo.env(env))}[("toolset", "lookup-order")]["openApiToolset"]
        assert body["url"] == url and url in body["openApiSchema"] and "$env_var" not in body["openApiSchema"]
    plan = CliRunner().invoke(main, ["plan", "--dir", str(root), "--env", "local"])
    assert plan.exit_code == 0 and "+ toolset lookup-order will be created" in plan.output, plan.output


def test_what_convert_tools_cannot_do_is_listed_at_its_position(tmp_path: Path) -> None:
    root = _repo(tmp_path, {"tools/lookup-order.yaml": LOOKUP, "tools/end.yaml": SYSTEM})
    (root / "tools" / "order-card.yaml").write_text(
        (root / "tools" / "order-card.yaml").read_text().replace("tools/order-status", "tools/lookup-order")
    )
    r = CliRunner().invoke(main, ["convert-tools", "--dir", str(root)])
    assert r.exit_code == 1
    assert "tools/end.yaml:1:1: systemTool has no toolset form: CES makes it itself; remove this file" in r.output
    assert "tools/order-card.yaml:16:27: names tools/lookup-order, now toolset lookup-order: name its tool instead" in r.output
    assert (root / "toolsets" / "lookup-order.yaml").exists() and (root / "tools" / "end.yaml").exists()


def test_a_tool_file_over_the_limits_is_left_by_hand(tmp_path: Path) -> None:
    """convert-tools reads each tool file round-trip: under the limits of every document (issue #34 item 1)."""
    bomb = "clientFunction:\n  name: f\n  x0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"  x{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 10)
    )
    root = _repo(tmp_path, {"tools/bomb.yaml": bomb})
    r = CliRunner().invoke(main, ["convert-tools", "--dir", str(root)])
    assert "tools/bomb.yaml:1:1: document expands to more than" in r.output, r.output
