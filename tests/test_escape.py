"""cesync/escape.py: each channel's escaper, on generated text with every hostile fragment."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from hypothesis import example, given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from cesync.escape import ci_log, md_cell, md_code, md_fence, one_line, output, terminal, xml_text, xml_tree
from tests.hostile_text import CONTROL, FRAGMENTS, hostile, markdown_problems, terminal_and_ci_problems

anything = st.one_of(hostile, st.text(), st.lists(st.sampled_from(FRAGMENTS), max_size=5).map("".join))
MD = MarkdownIt("commonmark").enable("table")


@given(anything)
def test_terminal_leaves_no_control_character_but_tabs_and_line_breaks(text: str) -> None:
    shown = terminal(text)
    assert not CONTROL.search(shown.replace("\r\n", "\n"))  # a CR that ends a line draws over nothing
    assert shown.count("\n") == text.count("\n") and shown.count("\t") == text.count("\t")
    assert shown.count("\r") == shown.count("\r\n") == text.count("\r\n")  # a lone CR is shown, never sent
    assert "\n" not in one_line(text) and not CONTROL.search(one_line(text))


@given(anything, st.booleans())
@example("\n\u00a0\u2003::add-mask::x", False)  # .NET's TrimStart takes Unicode white space too
def test_no_line_of_printed_text_is_a_ci_command(text: str, colour: bool) -> None:
    printed = f"\x1b[32m+ {text}\x1b[0m\n{text}" if colour else text
    assert terminal_and_ci_problems(output(printed), colour=colour) == []
    assert all(not line.lstrip().startswith("::") for line in ci_log(text).split("\n"))


def test_output_keeps_cesync_s_own_colours_only() -> None:
    assert output("\x1b[31m- gone\x1b[0m") == "\x1b[31m- gone\x1b[0m"
    assert output("\x1b[8mhidden\x1b[0m") == "\\u001b[8mhidden\x1b[0m"


@given(anything)
def test_a_code_span_holds_the_text_and_nothing_else(text: str) -> None:
    """Inline: one code span whose content is the text (on one line), whatever it holds."""
    tokens = MD.parseInline(f"said {md_code(text)} here")[0].children or []
    codes = [t for t in tokens if t.type == "code_inline"]
    assert len(codes) == 1 and [t.type for t in tokens] == ["text", "code_inline", "text"], tokens
    assert codes[0].content.strip(" ") == one_line(text).strip(" ")
    assert markdown_problems(f"said {md_code(text)} here") == []


@given(st.lists(anything, min_size=1, max_size=3))
def test_a_table_cell_holds_the_text_and_the_row_keeps_its_cells(texts: list[str]) -> None:
    row = "| " + " | ".join(md_cell(t) for t in texts) + " |"
    table = "| " + " | ".join("h" for _ in texts) + " |\n|" + "---|" * len(texts) + "\n" + row + "\n"
    tokens = MD.parse(table)
    cells = [t for t in tokens if t.type == "td_open"]
    assert len(cells) == len(texts), table
    assert markdown_problems(table) == []


@given(st.lists(anything, max_size=5))
def test_a_fence_holds_every_line(lines: list[str]) -> None:
    block = "\n".join(md_fence([x for t in lines for x in t.split("\n")], "diff")) + "\n\nafter\n"
    tokens = MD.parse(block)
    assert tokens[0].type == "fence" and tokens[0].info == "diff"
    assert tokens[-2].content == "after"  # the paragraph after the block is still one


@given(anything)
def test_xml_holds_any_text_once_escaped(text: str) -> None:
    root = ET.Element("testsuite", name=text)
    ET.SubElement(root, "failure", message=text).text = text
    parsed = ET.fromstring(ET.tostring(xml_tree(root), encoding="unicode"))
    assert parsed.get("name") == xml_text(text)


@given(text=hostile)
def test_an_escape_inside_a_json_string_reads_back_as_the_text(text: str) -> None:
    """The last pass runs over --format json too: each escape it writes is JSON's own, so a JSON
    string's value is unchanged (astral characters as surrogate pairs, as json.dumps writes them)."""
    import json

    written = json.dumps(text, ensure_ascii=False)
    assert json.loads(output(written)) == text
