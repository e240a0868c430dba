"""The registry rule (cesync.api.kinds): what differs between kinds is an attribute of the kind,
read from the kind a resource or a change carries; no module keeps a kind table or tests a
kind's name, except the registry itself and the emulator (which must not share our reading
of the API).

Every module of src/cesync is read with ``ast``, as tests/test_layers.py reads imports, so a
new ``kind == "tool"``, ``collection in ("agents", ...)``, ``SNAPSHOT_KINDS = {...}`` or
``KINDS[r.kind]`` fails here with its line, whatever its spelling, an f-string's included
(``name == f"{parent}/tools/{rid}"``). The kind words are the registry's own names and
collections, so a kind added later is covered without an edit here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from cesync.api.kinds import KINDS

SRC = Path(__file__).resolve().parents[1] / "src"
EXEMPT = ("cesync/api/kinds.py", "cesync/api/paths.py", "cesync/emulator/")  # paths: the REST paths the registry serves
WORDS = frozenset(w for k in KINDS.values() for w in (k.name, k.collection))
# Names that stand for one kind or its name: comparing with them is a kind test too.
KIND_NAMES = frozenset({"APP", "THE_APP", "TOOL_HOLDER"})
TABLE = 3  # a literal naming this many different kinds is a kind table


def _word(node: ast.AST) -> bool:
    return bool(_named(node))


def _named(node: ast.AST) -> set[str]:
    """The kind words a string names: all of it, or in an f-string a constant part or one of its
    ``/`` segments (``f"{parent}/tools/{rid}"`` hard-codes the tools collection as surely as "tools")."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value} & WORDS
    if isinstance(node, ast.JoinedStr):
        parts = [p.value for p in node.values if isinstance(p, ast.Constant) and isinstance(p.value, str)]
        return {w for part in parts for w in (part, *part.split("/")) if w in WORDS}
    return set()


def _words_in(node: ast.AST) -> set[str]:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items: list[ast.expr | None] = list(node.elts)
    elif isinstance(node, ast.Dict):
        items = list(node.keys)
    elif isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set"):
        return _words_in(node.args[0])
    else:
        return set()
    return {w for n in items if n is not None for w in _named(n)}


def _is_kind_name(node: ast.AST) -> bool:
    """``kind.name``, ``r.kind.name``: a kind's name, compared as a string."""
    if not (isinstance(node, ast.Attribute) and node.attr == "name"):
        return False
    inner = node.value
    return (isinstance(inner, ast.Name) and inner.id == "kind") or (isinstance(inner, ast.Attribute) and inner.attr == "kind")


def _kind_test(left: ast.AST, op: ast.cmpop, right: ast.AST) -> bool:
    if isinstance(op, (ast.In, ast.NotIn)):
        named_table = isinstance(right, ast.Name) and right.id.endswith("KINDS") and right.id != "KINDS"
        return bool(_words_in(right)) or named_table or _is_kind_name(left)
    sides = (left, right)
    return any(_word(s) or _is_kind_name(s) or (isinstance(s, ast.Name) and s.id in KIND_NAMES) for s in sides)


def leaks(path: Path) -> list[tuple[int, str]]:
    """(line, what) for each kind table or kind test in one module."""
    text = path.read_text(encoding="utf-8")
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(text, str(path))):
        what = ""
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_kind_test(sides[i], op, sides[i + 1]) for i, op in enumerate(node.ops)):
                what = "tests a kind's name: make the decision an attribute of ResourceKind"
        elif len(_words_in(node)) >= TABLE:
            what = "a table of kinds: make it an attribute of ResourceKind"
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == "KINDS"
            and isinstance(node.slice, ast.Attribute)
            and node.slice.attr == "kind"
        ):
            what = "looks a carried kind up again: read the kind it carries"
        if what:
            found.append((getattr(node, "lineno", 0), f"{what}: {ast.get_source_segment(text, node)}"))
    return found


MODULES = sorted(
    p for p in (SRC / "cesync").rglob("*.py") if not any(p.relative_to(SRC).as_posix().startswith(e) for e in EXEMPT)
)


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(SRC)) for p in MODULES])
def test_no_kind_table_or_kind_test_outside_the_registry(path: Path) -> None:
    offending = [f"{path.relative_to(SRC.parent)}:{line}: {what}" for line, what in leaks(path)]
    assert not offending, "\n".join(offending)


@pytest.mark.parametrize(
    ("code", "caught"),
    [
        ('if r.kind == "tool": pass', True),
        ('if "agents" != collection: pass', True),
        ('x = kind in ("agent", "example")', True),
        ("x = c.kind.name == EVALUATION", True),
        ("x = r.kind == APP", True),
        ("x = r.kind is THE_APP", True),
        ('SNAPSHOT_KINDS = frozenset({"app", "agent", "tool"})', True),
        ("x = r.kind in SNAPSHOT_KINDS", True),
        ('TABLE = {"tools": 1, "toolsets": 2, "agents": 3}', True),
        ("m = KINDS[r.kind].model", True),
        ("x = r.kind.singleton", False),
        ('x = "tool" in call', False),  # a field of a ToolCall, not a kind
        ('body = {"tools": [], "toolsets": []}', False),  # an agent's fields
        ("x = name in KINDS", False),  # a word checked against the registry itself
        ('k = KINDS["tool"]', False),  # naming a kind to act on it
        ("x = d.kind is c.kind", False),
        ('if name == f"{parent}/tools/{rid}": pass', True),  # inside an f-string
        ('x = kind in (f"{a}agents", f"{a}tools")', True),
        ('PATHS = [f"{p}/agents", f"{p}/tools", f"{p}/toolsets"]', True),
        ('name = f"{parent}/tools/{rid}"', False),  # building a name, not testing one
        ('x = f"the tool {t}" == text', False),  # prose
    ],
)
def test_the_rule(tmp_path: Path, code: str, caught: bool) -> None:
    module = tmp_path / "m.py"
    module.write_text(code + "\n")
    assert bool(leaks(module)) is caught, leaks(module)
