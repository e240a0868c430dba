"""BadRequest field paths back to the repo file's line and column."""

from __future__ import annotations

import pytest

from cesync.core.fieldpath import data_path, position
from cesync.core.yamlfile import Document, load_text


@pytest.mark.parametrize(
    ("field", "kind", "expected"),
    [
        ("agent.toolsets[0].toolset", "agent", ("toolsets", 0, "toolset")),
        ("toolsets[0].tool_ids[2]", "agent", ("toolsets", 0, "toolIds", 2)),
        ("tool.python_function.python_code", "tool", ("pythonFunction", "pythonCode")),
        ('app.variableDeclarations["x.y"].schema', "app", ("variableDeclarations", "x.y", "schema")),
        ("deployment.appVersion", "deployment", ("appVersion",)),
        ("agent.tools[", "agent", ("tools",)),  # what does not parse ends the path
        ("", "tool", ()),
    ],
)
def test_data_path(field: str, kind: str, expected: tuple[str | int, ...]) -> None:
    assert data_path(field, kind) == expected


TEXT = """displayName: Root
instruction: Help.
toolsets:
  - toolset: projects/p/locations/us/apps/a/toolsets/a
  - toolset: projects/p/locations/us/apps/a/toolsets/b
    tool_ids: [x, y]
"""


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (("toolsets", 1, "toolset"), (5, 14)),
        (("toolsets", 1, "toolIds", 1), (6, 19)),  # written snake_case in the file
        (("toolsets", 7, "toolset"), (4, 3)),  # no such item: the list
        (("instruction",), (2, 14)),
        ((), (1, 1)),
    ],
)
def test_position(path: tuple[str | int, ...], expected: tuple[int, int]) -> None:
    doc = load_text(TEXT, "agents/root.yaml")
    assert isinstance(doc, Document)
    assert position(doc.positions, path) == expected
