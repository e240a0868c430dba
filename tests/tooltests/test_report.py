"""tooltests/report: a JUnit report parses whatever a test's name or a tool's answer holds
(issue #34 finding 5: a name with \\x1b or \\x01 made XML that did not parse, and CI dropped it)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from hypothesis import example, given
from hypothesis import strategies as st

from cesync.tooltests.report import junit_xml
from cesync.tooltests.run import Result
from cesync.tooltests.schema import Case
from tests.hostile_text import hostile

text = st.one_of(hostile, st.text())


@given(name=text, message=text, file=text)
@example(name="greets \x1b[31m\x01", message="answer \x00\x0c\ufffe", file="tests/t.yaml")
def test_junit_parses_whatever_names_and_answers_hold(name: str, message: str, file: str) -> None:
    case = Case(file=file or "t.yaml", line=1, name=name, tool="t")
    xml = junit_xml([Result(case, "failed", (message,)), Result(case, "passed")])
    root = ET.fromstring(xml.split("\n", 1)[1])
    names = [c.get("name") for c in root.iter("testcase")]
    assert len(names) == 2 and names[0] == names[1]
    assert len(list(root.iter("failure"))) == 1
