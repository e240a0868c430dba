"""The fast YAML writer writes exactly what ruamel writes, or leaves the document to ruamel."""

from __future__ import annotations

import string
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cesync.core.yamlfile import SLOW, Document, fast_load, load_text
from cesync.core.yamlout import _fast_yaml, _ruamel_yaml, to_yaml
from cesync.repo.repo import load_repo
from tests.conftest import EXAMPLES

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
from generate import generate

WORDS = [
    "type",
    "object",
    "string",
    "200",
    "1.3",
    "true",
    "yes",
    "null",
    "",
    "#/components/x",
    "$env_var",
    "a: b",
    "x #y",
    "it's",
    "-x",
    ".inf",
    "...",
    "a,b",
    "[x]",
    "{y}",
    "https://x.example/a?b=c",
    "ends:",
    "trailing ",
    " lead",
    "ünï",
    "tab\there",
    "é",
    "2001-01-01",
    "0o17",
    "~",
    "=",
    "<<",
    "def f():\n    return 1\n",
    "a\nb",
    "a\n\nb\n",
    "a\n\n",
    "\nlead",
    "x\n  y\n",
    "line \nx\n",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.sampled_from(WORDS),
    st.text(alphabet=string.printable, max_size=20),
)
keys = st.one_of(st.sampled_from(WORDS), st.text(alphabet=string.ascii_letters + "$_-. :#'", min_size=1, max_size=10))
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(keys, inner, max_size=4)
        | st.builds(lambda k, v: {k: v}, st.sampled_from(["ref", "file"]), scalars)
    ),
    max_leaves=25,
)

SEEN: list[bool] = []


def check(data: Any) -> None:
    fast = _fast_yaml(data)
    SEEN.append(fast is not None)
    if fast is not None:
        assert fast == _ruamel_yaml(data)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(keys, values, min_size=1, max_size=5))
def test_fast_writer_matches_ruamel(data: dict[str, Any]) -> None:
    check(data)


# Characters YAML readers treat specially: every line break YAML 1.1 knows (libyaml and
# ruamel read \x85, \u2028, \u2029 and \r as breaks), BOM, tabs, quotes, indicators.
SPECIAL = st.sampled_from(
    ["\x85", "\u2028", "\u2029", "\r", "\r\n", "\n", "\ufeff", "\t", " ", "'", '"', "\\", "#", ":", "-", "a"]
)
special_text = st.lists(SPECIAL | st.characters(exclude_categories=["Cs"]), max_size=8).map("".join)
special_values = st.recursive(
    special_text | scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(special_text, inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(special_text | keys, special_values, min_size=1, max_size=4))
def test_written_yaml_reads_back_exactly(data: dict[str, Any]) -> None:
    """What export writes, both readers (libyaml's fast path and ruamel's) read back unchanged."""
    text = to_yaml(data)
    doc = load_text(text, "x.yaml")
    assert isinstance(doc, Document) and doc.data == data, text
    fast = fast_load(text)
    assert fast is SLOW or fast == data, text


def test_plans_of_real_bodies_take_the_fast_path(tmp_path: Path) -> None:
    """Every body of the example and of a generated realistic repo: the same text, and mostly fast."""
    SEEN.clear()
    from cesync.core.normalize import canonical

    for root in (EXAMPLES / "support-bot", generate(tmp_path / "gen", 60)):
        repo = load_repo(root)
        env = repo.env(repo.env_names[-1])
        for d in repo.render(env):
            check(canonical(d.kind, d.id, d.body).body)
            check(d.body)
    assert sum(SEEN) >= 0.9 * len(SEEN)
    assert to_yaml({"a": 1}) == "a: 1\n"


@pytest.mark.parametrize("value", ['lang: ANY("en")', "a\\b: c", '- a"b', 0.0, 1e-05, 1e16, -2.5, 1e300, 123456789.123])
def test_quotes_backslashes_and_floats_take_the_fast_path(value: Any) -> None:
    """A special string holding '"' or '\\' is single-quoted, a float written as ruamel spells it."""
    fast = _fast_yaml({"k": value})
    assert fast is not None and fast == _ruamel_yaml({"k": value})


@pytest.mark.parametrize("value", ["?x", "??", "?-", ": x", ":x", "?", ":", "-x", "a?b"])
@pytest.mark.parametrize("key", ["ref", "file"])
def test_ref_and_file_values_read_back_exactly(key: str, value: str) -> None:
    """{ref: ...} and {file: ...} are written on one line (flow style), where ruamel writes '?x'
    plain and then cannot read it back; the fast writer and ruamel agree on the text."""
    data = {"a": {key: value}, "b": [{key: value}]}
    text = to_yaml(data)
    doc = load_text(text, "x.yaml")
    assert isinstance(doc, Document) and doc.data == data, text
    check(data)
