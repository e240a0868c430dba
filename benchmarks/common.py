"""Shared by the benchmarks: a generated repo of N mixed tools."""

from __future__ import annotations

from pathlib import Path

CONFIG = """version: 1
environments:
  bench:
    endpoint: embedded
    project: bench
    location: us
    app: bench
"""

KINDS = [
    "clientFunction:\n  name: f{i}\n  description: Client function {i}\n  parameters:\n    type: OBJECT\n    properties:\n      q: {{type: STRING}}\n",
    'pythonFunction:\n  name: p{i}\n  pythonCode: |\n    def p{i}(x: int) -> dict:\n        """Double x."""\n        return {{"y": 2 * x}}\ntimeout: 2.5s\n',
    "googleSearchTool:\n  name: g{i}\n  excludeDomains: [a{i}.example, b{i}.example]\n",
    "openApiTool:\n  name: o{i}\n  openApiSchema: |\n    openapi: 3.0.0\n    info: {{title: t{i}, version: '1'}}\n    paths:\n      /x{i}: {{get: {{operationId: op{i}, responses: {{'200': {{description: ok}}}}}}}}\n",
    "dataStoreTool:\n  name: d{i}\n  boostSpecs:\n    - dataStores: [ds]\n      spec: [{{conditionBoostSpecs: [{{condition: c, boost: 0.3}}]}}]\n",
]


def generate(root: Path, n: int) -> Path:
    (root / "tools").mkdir(parents=True, exist_ok=True)
    (root / "cesync.yaml").write_text(CONFIG)
    for i in range(n):
        (root / "tools" / f"t{i:04d}.yaml").write_text(KINDS[i % len(KINDS)].format(i=i))
    return root
