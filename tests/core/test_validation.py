"""What CES reports wrong with the app's resources, read from their output-only fields."""

from __future__ import annotations

from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.core.validation import INVALID_EXAMPLE, findings

APP = "projects/p/locations/us/apps/a"


def test_findings_of_each_kind() -> None:
    remote = [
        Resource(KINDS["app"], "app", {"name": APP, "validationErrors": ["Root agent is not set.", ""]}),
        Resource(KINDS["agent"], "root", {"validationErrors": ["Tool 'x' is not found."]}),
        Resource(KINDS["agent"], "ok", {"validationErrors": []}),
        Resource(KINDS["example"], "e", {"invalid": True}),
        Resource(KINDS["example"], "fine", {"invalid": False}),
        Resource(KINDS["tool"], "t", {"validationErrors": ["not a Tool field"], "invalid": True}),
        Resource(KINDS["agent"], "odd", {"validationErrors": "not a list"}),
    ]
    assert findings(APP, remote) == {
        APP: ["validationErrors: Root agent is not set."],
        f"{APP}/agents/root": ["validationErrors: Tool 'x' is not found."],
        f"{APP}/examples/e": [INVALID_EXAMPLE],
    }
