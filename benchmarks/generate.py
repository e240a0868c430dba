"""A realistic generated cesync repo of N tools, for the benchmarks.

The mix the issue asks for: 40% Python functions of about 30 lines, 35% OpenAPI
toolsets with schemas of about 120 lines (CES makes OpenAPI tools only from
toolsets), the rest spread over the other tool types and connector toolsets; half of the code and schemas live in ``{file: ...}`` includes. Four
environments with per-environment variables, as a team with dev, staging and
prod (and a local emulator) would have.

    python benchmarks/generate.py OUT_DIR --n 1000
    python benchmarks/generate.py OUT_DIR --n 10000 --agents   # the 10k app: agents and guardrails too

With ``--agents`` the N resources are an app as a large team keeps it: out of every 100, 90
tools and toolsets as above, 8 agents in a tree (each naming its children and about a dozen
of the tools, the root named by app.yaml) and 2 guardrails that the agents name.
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

ENVIRONMENTS = ("local", "dev", "staging", "prod")

CONFIG = """version: 1
defaults:
  project: bench
  location: us
  vars:
    SUPPORT_EMAIL: support@acme.example
environments:
""" + "".join(
    f"""  {env}:
    app: bench-{env}
    vars:
      API_BASE: https://api.{env}.acme.example
      SECRETS_PROJECT: acme-{env}-secrets
      TOOL_SA: ces-tools@acme-{env}.iam.gserviceaccount.com
"""
    for env in ENVIRONMENTS
)


def python_code(i: int) -> str:
    """About 30 lines: a docstring, a helper, branches, a dict result."""
    return textwrap.dedent(
        f'''\
        def quote_{i}(order_total: float, days_since_delivery: int, tier: str = "standard") -> dict:
            """Decide whether order class {i} can be refunded, and how much.

            Args:
                order_total: the amount paid, in the order's currency.
                days_since_delivery: whole days since the parcel arrived.
                tier: the customer's loyalty tier (standard, silver, gold).
            """
            window = _window(tier)
            if days_since_delivery > window:
                return {{"eligible": False, "reason": f"outside the {{window}}-day window"}}
            fee = 0.0 if order_total >= {50 + i % 50} else 4.99
            if tier == "gold":
                fee = 0.0
            refund = round(max(order_total - fee, 0.0), 2)
            return {{
                "eligible": True,
                "refund": refund,
                "fee": fee,
                "window": window,
                "policy": "v{i % 7}",
            }}


        def _window(tier: str) -> int:
            if tier == "gold":
                return 60
            if tier == "silver":
                return 45
            return 30
        '''
    )


def openapi_schema(i: int) -> str:
    """About 120 lines: two resources with parameters, bodies, components."""
    return textwrap.dedent(
        f"""\
        openapi: 3.0.3
        info:
          title: Orders service {i}
          version: "1.{i % 10}"
          description: Orders, shipments and returns of store {i}.
        servers:
          - url: $env_var
        paths:
          /stores/{i}/orders/{{orderId}}:
            get:
              operationId: getOrder{i}
              summary: Get an order
              parameters:
                - name: orderId
                  in: path
                  required: true
                  schema: {{type: string, pattern: "^[A-Z0-9-]+$"}}
                - name: expand
                  in: query
                  required: false
                  schema:
                    type: array
                    items: {{type: string, enum: [lines, shipments, returns]}}
              responses:
                "200":
                  description: The order
                  content:
                    application/json:
                      schema: {{$ref: "#/components/schemas/Order"}}
                "404":
                  description: No such order
                  content:
                    application/json:
                      schema: {{$ref: "#/components/schemas/Error"}}
          /stores/{i}/orders/{{orderId}}/returns:
            post:
              operationId: createReturn{i}
              summary: Open a return for some lines of an order
              parameters:
                - name: orderId
                  in: path
                  required: true
                  schema: {{type: string}}
              requestBody:
                required: true
                content:
                  application/json:
                    schema: {{$ref: "#/components/schemas/ReturnRequest"}}
              responses:
                "201":
                  description: The return
                  content:
                    application/json:
                      schema: {{$ref: "#/components/schemas/Return"}}
                "409":
                  description: A return is already open
                  content:
                    application/json:
                      schema: {{$ref: "#/components/schemas/Error"}}
        components:
          schemas:
            Money:
              type: object
              required: [amount, currency]
              properties:
                amount: {{type: number, minimum: 0}}
                currency: {{type: string, minLength: 3, maxLength: 3}}
            Line:
              type: object
              required: [sku, quantity]
              properties:
                sku: {{type: string}}
                quantity: {{type: integer, minimum: 1}}
                price: {{$ref: "#/components/schemas/Money"}}
            Shipment:
              type: object
              properties:
                carrier: {{type: string}}
                tracking: {{type: string}}
                shippedAt: {{type: string, format: date-time}}
                deliveredAt: {{type: string, format: date-time}}
            Order:
              type: object
              required: [orderId, status, lines]
              properties:
                orderId: {{type: string}}
                status:
                  type: string
                  enum: [PLACED, PAID, SHIPPED, DELIVERED, CANCELLED]
                placedAt: {{type: string, format: date-time}}
                total: {{$ref: "#/components/schemas/Money"}}
                lines:
                  type: array
                  items: {{$ref: "#/components/schemas/Line"}}
                shipments:
                  type: array
                  items: {{$ref: "#/components/schemas/Shipment"}}
                customer:
                  type: object
                  properties:
                    id: {{type: string}}
                    email: {{type: string, format: email}}
                    tier: {{type: string, enum: [standard, silver, gold]}}
            ReturnRequest:
              type: object
              required: [lines, reason]
              properties:
                lines:
                  type: array
                  minItems: 1
                  items:
                    type: object
                    required: [sku, quantity]
                    properties:
                      sku: {{type: string}}
                      quantity: {{type: integer, minimum: 1}}
                reason:
                  type: string
                  enum: [DAMAGED, WRONG_ITEM, NOT_AS_DESCRIBED, OTHER]
                comment: {{type: string, maxLength: 500}}
            Return:
              type: object
              properties:
                returnId: {{type: string}}
                status: {{type: string, enum: [OPEN, RECEIVED, REFUNDED, REJECTED]}}
                refund: {{$ref: "#/components/schemas/Money"}}
                label: {{type: string, format: uri}}
            Error:
              type: object
              properties:
                code: {{type: integer}}
                message: {{type: string}}
                details:
                  type: array
                  items: {{type: object, additionalProperties: true}}
        """
    )


def indent(text: str, by: int) -> str:
    return textwrap.indent(text, " " * by)


def python_tool(i: int, include: bool) -> tuple[str, dict[str, str]]:
    code = python_code(i)
    if include:
        return (
            f"pythonFunction:\n  name: quote_{i}\n  pythonCode: {{file: ../code/quote_{i}.py}}\ntimeout: 5s\n",
            {f"code/quote_{i}.py": code},
        )
    return f"pythonFunction:\n  name: quote_{i}\n  pythonCode: |\n{indent(code, 4)}timeout: 5s\n", {}


def openapi_toolset(i: int, include: bool) -> tuple[str, dict[str, str]]:
    """An OpenAPI toolset (CES makes OpenAPI tools only from toolsets)."""
    head = (
        f"description: Orders API of store {i}.\nopenApiToolset:\n"
        f"  url: ${{API_BASE}}/stores/{i}\n"
        "  apiAuthentication:\n    apiKeyConfig:\n      keyName: X-Api-Key\n"
        f"      apiKeySecretVersion: projects/${{SECRETS_PROJECT}}/secrets/orders-{i}/versions/latest\n"
        "      requestLocation: HEADER\n"
    )
    schema = openapi_schema(i)
    if include:
        return head + f"  openApiSchema: {{file: ../schemas/orders_{i}.yaml}}\ntimeout: 10s\n", {
            f"schemas/orders_{i}.yaml": schema
        }
    return head + f"  openApiSchema: |\n{indent(schema, 4)}timeout: 10s\n", {}


OTHERS = [
    """clientFunction:
  name: open_ticket_{i}
  description: Ask the client app to open support form {i}.
  parameters:
    type: OBJECT
    properties:
      subject: {{type: STRING, description: Short summary}}
      priority: {{type: STRING, enum: [low, normal, high]}}
      attachments: {{type: ARRAY, items: {{type: STRING}}, maxItems: 5}}
    required: [subject]
""",
    """googleSearchTool:
  name: web_search_{i}
  description: Search help centre {i}.
  contextUrls:
    - https://help{i}.acme.example/
  preferredDomains: [help{i}.acme.example]
  excludeDomains: [spam{i}.example]
""",
    """dataStoreTool:
  name: faq_{i}
  description: Answer from FAQ data store {i}.
  dataStoreSource:
    dataStore:
      name: projects/bench/locations/global/collections/default_collection/dataStores/faq{i}
  boostSpecs:
    - dataStores: [projects/bench/locations/global/collections/default_collection/dataStores/faq{i}]
      spec:
        - conditionBoostSpecs:
            - condition: 'lang: ANY("en")'
              boost: 0.5
  modalityConfigs:
    - modalityType: TEXT
      groundingConfig: {{groundingLevel: 3}}
  filterParameterBehavior: NEVER_INCLUDE
""",
    """fileSearchTool:
  name: manuals_{i}
  description: Search product manuals {i}.
  corpusType: USER_OWNED
  fileCorpus: projects/bench/locations/us-central1/ragCorpora/manuals{i}
""",
    """widgetTool:
  name: order_card_{i}
  description: Show order {i} as a card.
  widgetType: ORDER_SUMMARY
  parameters:
    type: OBJECT
    properties:
      orderId: {{type: STRING}}
      status: {{type: STRING}}
      total: {{type: NUMBER, minimum: 0}}
    required: [orderId]
  textResponseConfig:
    type: STATIC
    staticText: Here is order {i}.
""",
]


# A connector toolset (CES makes connector tools only from toolsets).
CONNECTOR = """connectorToolset:
  connection: projects/bench/locations/us-central1/connections/crm{i}
  connectorActions:
    - entityOperation:
        entityId: Contact
        operation: GET
      outputFields: [Name, Email]
  authConfig:
    oauth2AuthCodeConfig:
      oauthToken: $context.variables.crm_token
description: Read a contact from CRM {i}.
"""


def tool(i: int) -> tuple[str, str, dict[str, str]]:
    """The folder and text of resource number i and any files it includes. Out of every 20: 8 Python
    tools, 7 OpenAPI toolsets, 5 others (a connector toolset among them, now and then)."""
    slot = i % 20
    if slot < 8:
        return ("tools", *python_tool(i, include=slot % 2 == 0))
    if slot < 15:
        return ("toolsets", *openapi_toolset(i, include=slot % 2 == 0))
    other = (i // 20 * 5 + slot - 15) % (len(OTHERS) + 1)
    if other == len(OTHERS):
        return "toolsets", CONNECTOR.format(i=i), {}
    return "tools", OTHERS[other].format(i=i), {}


def guardrail(g: int) -> str:
    if g % 2:
        return f"""displayName: Prompt safety {g}
llmPromptSecurity:
  defaultSettings: {{}}
enabled: true
action:
  respondImmediately:
    responses:
      - text: I cannot help with that request ({g}).
"""
    return f"""displayName: No card numbers {g}
description: Stop before a card number is repeated back.
contentFilter:
  bannedContentsInAgentResponse: ['\\b\\d{{4}}[ -]?\\d{{4}}[ -]?\\d{{4}}[ -]?\\d{{4}}\\b', 'secret-{g}']
  matchType: REGEXP_MATCH
enabled: true
action:
  respondImmediately:
    responses:
      - text: For your safety I cannot repeat card numbers ({g}).
"""


def agent(a: int, children: list[int], tools: list[str], toolsets: list[str], guardrails: list[int]) -> str:
    lines = [
        f"displayName: Agent {a}",
        f"description: Handles conversations of area {a}.",
        "llmAgent: {}",
        "instruction: |",
        f"  You look after area {a}. Greet the customer, find their order, and use the tools",
        "  below before promising anything. Hand anything outside your area to a child agent.",
    ]
    if tools:
        lines += ["tools:", *(f"  - {{ref: tools/{t}}}" for t in tools)]
    if toolsets:
        lines += ["toolsets:", *(f"  - toolset: {{ref: toolsets/{t}}}" for t in toolsets)]
    if children:
        lines += ["childAgents:", *(f"  - {{ref: agents/a{c:05d}}}" for c in children)]
    if guardrails:
        lines += ["guardrails:", *(f"  - {{ref: guardrails/g{g:05d}}}" for g in guardrails)]
    return "\n".join(lines) + "\n"


APP = """displayName: Bench app
description: A large generated app.
rootAgent: {ref: agents/a00000}
timeZoneSettings:
  timeZone: America/New_York
globalInstruction: Be brief and friendly.
"""


def generate(root: Path, n: int, agents: bool = False) -> Path:
    """n resources under root; with agents, 8% agents in a tree and 2% guardrails among them."""
    for folder in ("tools", "toolsets", "code", "schemas", *(("agents", "guardrails") if agents else ())):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "cesync.yaml").write_text(CONFIG)
    n_agents, n_guardrails = (max(1, n * 8 // 100), max(1, n * 2 // 100)) if agents else (0, 0)
    n_tools = n - n_agents - n_guardrails
    made: list[tuple[str, str]] = []  # (folder, id) of each tool and toolset
    for i in range(n_tools):
        folder, text, extra = tool(i)
        (root / folder / f"t{i:05d}.yaml").write_text(text)
        made.append((folder, f"t{i:05d}"))
        for rel, content in extra.items():
            (root / rel).write_text(content)
    if not agents:
        return root
    for g in range(n_guardrails):
        (root / "guardrails" / f"g{g:05d}.yaml").write_text(guardrail(g))
    per = -(-len(made) // n_agents)  # each tool named by one agent
    for a in range(n_agents):
        mine = made[a * per : (a + 1) * per]
        children = [c for c in (2 * a + 1, 2 * a + 2) if c < n_agents]  # a binary tree from a00000
        text = agent(
            a,
            children,
            [t for f, t in mine if f == "tools"],
            [t for f, t in mine if f == "toolsets"],
            [a % n_guardrails],
        )
        (root / "agents" / f"a{a:05d}.yaml").write_text(text)
    (root / "app.yaml").write_text(APP)
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--agents", action="store_true", help="Agents in a tree and guardrails among the N.")
    args = parser.parse_args()
    print(generate(args.out, args.n, args.agents))


if __name__ == "__main__":
    main()
