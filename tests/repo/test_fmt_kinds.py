"""fmt on files of every kind, drawn from the model (tests/strategies.py): whatever the key order,
the mix of flow and block style and the comments, the result lists every message's keys where
a file writes them (walk.written_order: what names a resource first, then the API's order), holds
the same data, keeps each collection's flow or block style and every comment, and is a fixed point.
"""

from __future__ import annotations

import re
from io import StringIO
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import LiteralScalarString

from cesync.api.kinds import KINDS
from cesync.core.walk import Path, SpecWalker, written_order
from cesync.models import FieldSpec, ProtoModel
from cesync.repo.fmt import format_text
from tests.strategies import bodies

COMMENT = re.compile(r"# (c\d+)$", re.MULTILINE)


class _Styler:
    """A body as a ruamel tree: keys shuffled, each collection flow or block (inside flow, flow),
    multi-line texts sometimes | blocks, and numbered comments where a block mapping can hold them."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw
        self.comments = 0

    def _comment(self) -> str:
        self.comments += 1
        return f"c{self.comments}"

    def tree(self, value: Any, flow: bool, column: int | None) -> Any:
        """column: where the keys of a block mapping at this place start (None: no full-line comments)."""
        if isinstance(value, dict):
            return self._map(value, flow, column)
        if isinstance(value, list):
            seq = CommentedSeq()
            flow = flow or self.draw(st.booleans())
            for item in value:
                seq.append(self.tree(item, flow, None))
            if flow:
                seq.fa.set_flow_style()
            else:
                seq.fa.set_block_style()
            return seq
        if isinstance(value, str) and "\n" in value and not flow and self.draw(st.booleans()):
            return LiteralScalarString(value)
        return value

    def _map(self, value: dict[str, Any], flow: bool, column: int | None) -> CommentedMap:
        node = CommentedMap()
        flow = flow or self.draw(st.booleans())
        for key in self.draw(st.permutations(list(value))):
            item = value[key]
            nested = None if column is None or isinstance(item, list) else column + 2
            node[key] = self.tree(item, flow, nested)
        if flow:
            node.fa.set_flow_style()
            return node
        node.fa.set_block_style()
        for i, key in enumerate(node):
            item = node[key]
            # ruamel writes an end-of-line comment after an empty or block collection's key where it breaks the file
            block_or_empty = isinstance(item, CommentedMap | CommentedSeq) and (not item or not item.fa.flow_style())
            if not block_or_empty and not isinstance(item, LiteralScalarString) and self.draw(st.booleans()):
                node.yaml_add_eol_comment(f"# {self._comment()}", key)
            if column is not None and (i or column == 0) and self.draw(st.booleans()):
                node.yaml_set_comment_before_after_key(key, before=self._comment(), indent=column)
        return node


@st.composite
def _files(draw: st.DrawFn) -> tuple[type[ProtoModel], str, int]:
    """(model, the text of a file of a kind drawn from every kind, how many comments it has)."""
    kind = KINDS[draw(st.sampled_from(sorted(KINDS)))]
    body = dict(draw(bodies(kind.model, depth=2)))
    if draw(st.booleans()):
        body["id"] = "x"
    styler = _Styler(draw)
    tree = styler.tree(body, False, 0)
    yaml = YAML(typ="rt", pure=True)
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.brace_single_entry_mapping_in_flow_sequence = True
    buf = StringIO()
    yaml.dump(tree, buf)
    return kind.model, buf.getvalue(), styler.comments


class _Order(SpecWalker):
    """Collects each message's keys as written and as written_order has them."""

    def __init__(self) -> None:
        self.seen: list[tuple[list[str], list[str]]] = []

    def order(self, data: dict[str, Any], table: dict[str, FieldSpec]) -> list[str]:
        rank = written_order(table)
        keys = list(data)
        self.seen.append((keys, sorted(keys, key=lambda k: rank.get(k, len(rank)))))
        return keys


def _styles(node: Any, path: Path = ()) -> dict[Path, bool]:
    """Path -> whether the (non-empty) collection there is in flow style."""
    out: dict[Path, bool] = {}
    if isinstance(node, CommentedMap | CommentedSeq) and node:
        out[path] = bool(node.fa.flow_style())
        items = node.items() if isinstance(node, CommentedMap) else enumerate(node)
        for key, value in items:
            out |= _styles(value, (*path, key))
    return out


def _rt(text: str) -> Any:
    return YAML(typ="rt", pure=True).load(text)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_files())
def test_fmt_orders_every_kind_as_files_write_it_and_keeps_style_and_comments(case: tuple[type[ProtoModel], str, int]) -> None:
    model, text, comments = case
    out = format_text(text, model)
    safe = YAML(typ="safe", pure=True)
    assert safe.load(out) == safe.load(text), (text, out)
    assert format_text(out, model) == out, (text, out)
    order = _Order()
    order.walk(safe.load(out), model)
    assert all(keys == wanted for keys, wanted in order.seen), (text, out)
    assert sorted(COMMENT.findall(out)) == sorted(f"c{i}" for i in range(1, comments + 1)), (text, out)
    assert _styles(_rt(out)) == _styles(_rt(text)), (text, out)
    for bracket in "{[":  # [{ref: x}] is not rewritten as [ref: x], nor a flow mapping as block
        assert out.count(bracket) == text.count(bracket), (text, out)


def test_the_issue_file_keeps_its_flow_style_and_names_come_first() -> None:
    """#28 item 2's agent and guardrail, as a newcomer wrote them."""
    from cesync.models import Agent, Guardrail

    agent = "llmAgent: {}\ndisplayName: Support\ntools: [{ref: tools/x}, {ref: tools/y}]\n"
    assert format_text(agent, Agent) == "displayName: Support\nllmAgent: {}\ntools: [{ref: tools/x}, {ref: tools/y}]\n"
    guardrail = "contentFilter:\n  bannedContents: [a]\ndisplayName: G\naction: {respondImmediately: {responses: [{text: hi}]}}\n"
    assert format_text(guardrail, Guardrail) == (
        "displayName: G\ncontentFilter:\n  bannedContents: [a]\naction: {respondImmediately: {responses: [{text: hi}]}}\n"
    )
