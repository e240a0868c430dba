"""docs/architecture.md, "Adding a plan rule": the worked pass and its test run as written."""

from __future__ import annotations

import re
from typing import Any

from tests.conftest import ROOT

PAGE = ROOT / "docs" / "architecture.md"


def _block(label: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    found = re.search(rf"<!-- plan-rule: {label} [^>]*-->\n```python\n(.*?)```", text, re.DOTALL)
    assert found, f"no python block marked '{label}' on {PAGE.name}"
    return found.group(1)


def test_the_worked_pass_and_its_tests_pass() -> None:
    scope: dict[str, Any] = {"__name__": "cesync.core.passes.deployed_agents"}
    exec(compile(_block("pass"), "deployed_agents.py", "exec"), scope)
    exec(compile(_block("test"), "test_deployed_agents.py", "exec"), scope)
    tests = [f for name, f in scope.items() if name.startswith("test_")]
    assert len(tests) == 2
    for test in tests:
        test()
