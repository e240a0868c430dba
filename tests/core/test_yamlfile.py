"""The libyaml fast path reads every document exactly as ruamel (YAML 1.2) does, or steps aside."""

from __future__ import annotations

import json
import string
from io import StringIO
from typing import Any

import pytest
import yaml as pyyaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from cesync.core.documents import parse_document
from cesync.core.yamlfile import SLOW, Document, _load_rt, fast_load, load_text

# Plain scalars whose meaning differs between YAML 1.1, YAML 1.2 and JSON, or that
# need ruamel's own constructors (octal, hex, underscores, timestamps, merge keys).
TRICKY = [
    "yes",
    "no",
    "on",
    "off",
    "Yes",
    "NO",
    "y",
    "n",
    "true",
    "False",
    "TRUE",
    "~",
    "null",
    "Null",
    "NULL",
    "",
    "0",
    "-0",
    "+1",
    "012",
    "0o17",
    "0x1F",
    "0b101",
    "1_000",
    "1__0",
    "1.5",
    "-2.5e3",
    "1e3",
    "1.",
    ".5",
    "+.5",
    ".inf",
    "-.Inf",
    ".nan",
    "12:30",
    "12:30:00",
    "1:20.5",
    "2001-12-14",
    "2001-12-14t21:59:43.10-05:00",
    "2001-12-14 21:59:43.10 -5",
    "<<",
    "=",
    "1.2.0",
    "0.3",
    "v1",
    "3.0.3",
    "007",
    "0.",
    "-",
    "+",
    "_1",
]


def rt_data(text: str) -> Any:
    doc = _load_rt(text, "f.yaml")
    return doc.data if isinstance(doc, Document) else doc


def safe_data(text: str) -> Any:
    try:
        return YAML(typ="safe", pure=True).load(text)
    except Exception as exc:
        return exc


FAST_ANSWERS: list[bool] = []


def same(text: str) -> None:
    """Whenever the fast path answers, ruamel answers the same (round-trip and safe loaders)."""
    fast = fast_load(text)
    FAST_ANSWERS.append(fast is not SLOW)
    if fast is SLOW:
        return
    assert rt_data(text) == fast
    assert json.dumps(rt_data(text)) == json.dumps(fast)  # also key order and int/float/bool kinds
    assert safe_data(text) == fast


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(TRICKY),
    st.text(alphabet=string.printable + "éß€😀", max_size=30),
)
keys = st.one_of(
    st.sampled_from(TRICKY), st.text(alphabet=string.ascii_letters + string.digits + "_-.:$ ", min_size=1, max_size=12)
)
documents = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4), max_leaves=30
)


def ruamel_text(data: Any) -> str:
    buf = StringIO()
    yaml = YAML()
    yaml.dump(data, buf)
    return buf.getvalue()


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(data=documents, style=st.sampled_from(["ruamel", "block", "flow", "json"]))
def test_fast_load_reads_dumped_documents_like_ruamel(data: Any, style: str) -> None:
    if style == "ruamel":
        text = ruamel_text(data)
    elif style == "json":
        text = json.dumps(data, indent=1)
    else:
        text = pyyaml.safe_dump(data, default_flow_style=style == "flow", allow_unicode=True, sort_keys=False)
    same(text)


@settings(max_examples=300, deadline=None)
@given(
    entries=st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "key", "yes", "1", "true", "~"]), st.one_of(st.sampled_from(TRICKY), st.text(max_size=20))
        ),
        max_size=6,
    ),
    nest=st.booleans(),
)
@example(entries=[("a", "\t")], nest=False)  # found by hypothesis: 'a: \t' is null to libyaml, an error to ruamel
@example(entries=[("a", ">#")], nest=False)  # found by hypothesis: 'a: >#' is '' to libyaml, an error to ruamel
@example(entries=[("a", "|+2#x")], nest=True)
@example(entries=[("a", "!")], nest=False)  # found by hypothesis: 'a: !' is null to ruamel, '' to libyaml
def test_fast_load_resolves_plain_scalars_like_ruamel(entries: list[tuple[str, str]], nest: bool) -> None:
    """Written by hand, unquoted: the scalar rules (and any syntax the two parsers see differently)."""
    lines = [f"{k}: {v}" for k, v in entries] + [f"- {v}" for _, v in entries if nest]
    text = "\n".join(lines) + "\n"
    same(text)
    same("top:\n" + "".join(f"  {line}\n" for line in lines if not line.startswith("-")))
    same("[" + ", ".join(v for _, v in entries) + "]\n")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: yes\nb: no\nc: on\nd: off\n", {"a": "yes", "b": "no", "c": "on", "d": "off"}),  # YAML 1.2: strings
        ("a: true\nb: False\n", {"a": True, "b": False}),
        ("a: 0o17\n", {"a": 15}),  # 1.2 octal (ruamel's path)
        ("a: 12:30:00\n", {"a": "12:30:00"}),  # no sexagesimal
        ("a: 1.5\nb: 7\nc: ~\nd:\n", {"a": 1.5, "b": 7, "c": None, "d": None}),
        ("version: 1.2.0\n", {"version": "1.2.0"}),
        ("a: &x {b: 1}\nc: *x\n", {"a": {"b": 1}, "c": {"b": 1}}),
        ("s: |\n  line 1\n  line 2\nf: >\n  folded\n  text\n", {"s": "line 1\nline 2\n", "f": "folded text\n"}),
        ("%YAML 1.1\n---\na: yes\n", {"a": True}),  # the directive is honoured (ruamel's path)
        ("", None),
    ],
)
def test_yaml_12_semantics(text: str, expected: Any) -> None:
    doc = load_text(text, "f.yaml")
    assert isinstance(doc, Document)
    assert doc.data == expected
    assert rt_data(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\na: 2\n",
        "a:\n\tb: 1\n",
        "a: [1\n",
        "- a\nb: 1\n",
        "a: *nope\n",
        "---\na\n---\nb\n",
        "a: !!binary aGk=\n",
        "? [a]\n: 1\n",
    ],
)
def test_what_the_fast_path_leaves_to_ruamel(text: str) -> None:
    """Errors, duplicate keys, tags and complex keys: ruamel's answer, message and all."""
    assert fast_load(text) is SLOW
    got, rt = load_text(text, "f.yaml"), _load_rt(text, "f.yaml")
    assert (got.data, got.file) == (rt.data, rt.file) if isinstance(got, Document) and isinstance(rt, Document) else got == rt


def test_positions_come_from_the_round_trip_parse_when_asked() -> None:
    text = "a:\n  b: [1, {c: 2}]\nd: x\n"
    fast, slow = load_text(text, "f.yaml"), _load_rt(text, "f.yaml")
    assert isinstance(fast, Document) and isinstance(slow, Document)
    for path in [("a",), ("a", "b"), ("a", "b", 1), ("a", "b", 1, "c"), ("d",), ("zz",)]:
        for key in (False, True):
            assert fast.positions.at(path, key=key) == slow.positions.at(path, key=key)


def test_parse_document_is_cached_and_shared() -> None:
    text = "openapi: 3.0.0\npaths: {/x: {get: {}}}\n"
    assert parse_document(text) is parse_document(text)
    assert parse_document(text) == {"openapi": "3.0.0", "paths": {"/x": {"get": {}}}}


def test_the_generated_cases_mostly_take_the_fast_path() -> None:
    """The comparisons above prove something only if the fast path answered most of them."""
    FAST_ANSWERS.clear()
    test_fast_load_reads_dumped_documents_like_ruamel()
    print(f"fast path: {sum(FAST_ANSWERS)} of {len(FAST_ANSWERS)}")
    assert sum(FAST_ANSWERS) > len(FAST_ANSWERS) / 2


PARSER_WORDS = ("<block", "while parsing", "while scanning", "simple key", "expected <", "block end")


@given(
    st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=2, max_size=6, unique=True),
    st.data(),
)
def test_an_indentation_mistake_is_said_in_words(keys: list[str], data: st.DataObject) -> None:
    """A line moved left or right in a nested document: the message says what to fix, never the parser's jargon."""
    lines = ["top:"] + [f"  {k}: {i}" for i, k in enumerate(keys)] + ["  items:", "    - x", "    - y", "after: 1"]
    at = data.draw(st.integers(1, len(lines) - 1))
    shift = data.draw(st.sampled_from([-1, 1, 3]))
    line = lines[at]
    lines[at] = line[-shift:] if shift < 0 and line.startswith(" ") else " " * max(shift, 0) + line
    found = load_text("\n".join(lines) + "\n", "f.yaml")
    if isinstance(found, Document):
        return  # some moves stay valid YAML (a deeper list item)
    assert not any(w in found.message for w in PARSER_WORDS), found.message


@pytest.mark.parametrize(
    ("text", "where", "words"),
    [
        ("a: 1\nb\nc: 2\n", "f.yaml:2:1", "missing ':'"),
        ("a: {b: 1\nc: 2\n", "f.yaml:1:4", "'{' is not closed"),
        ("a: [1, 2\nc: 2\n", "f.yaml:1:4", "'[' is not closed"),
        ("a: 'x\nb: 2\n", "f.yaml:1:4", "no closing quote"),
        ("a:\n  - x\n - y\n", "f.yaml:3:2", "indented differently"),
        ("displayName: [\n", "f.yaml:2:1", "never closed: add its ']' or '}'"),
        ("a: 1\nb: 2\na: 3\n", "f.yaml:3:1", "the key 'a' is written twice"),
        ("a: @x\n", "f.yaml:1:4", "cannot start with '@'"),
        ("a: `x`\n", "f.yaml:1:4", "cannot start with '`'"),
    ],
)
def test_parser_mistakes_point_where_they_begin(text: str, where: str, words: str) -> None:
    found = load_text(text, "f.yaml")
    assert not isinstance(found, Document)
    assert str(found).startswith(where) and words in found.message, found


@given(
    st.recursive(st.integers(0, 9), lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from("abc"), c, max_size=3)),
    st.data(),
)
def test_a_file_cut_off_inside_brackets_is_said_in_words(value: object, data: st.DataObject) -> None:
    """An editor that saved half a line (`tools: [`): the end of the file, and what is missing."""
    import json

    text = "top: " + json.dumps(value)
    openers = [i for i, ch in enumerate(text) if ch in "[{"]
    if not openers:
        return
    cut = data.draw(st.sampled_from(openers))
    found = load_text(text[: cut + 1] + "\n", "f.yaml")
    assert not isinstance(found, Document)
    assert not any(w in found.message for w in PARSER_WORDS), found.message


# --- the limits of every document, the app's copies included (issue #34 findings 1 and 2) -------


def _alias_bomb(levels: int, width: int, scalar: str) -> str:
    lines = ["openapi: 3.0.0", "paths: {}", f"x-a0: &a0 [{', '.join([scalar] * width)}]"]
    lines += [f"x-a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@settings(max_examples=30, deadline=2000)
@given(levels=st.integers(6, 12), width=st.integers(10, 16), scalar=st.sampled_from(["lol", "'x'", "{a: b}", "[1]"]))
def test_an_alias_bomb_is_refused_before_it_expands(levels: int, width: int, scalar: str) -> None:
    """Finding 1: the app's copy of a schema went to ruamel unbounded, and on to the seal's deep copy."""
    from cesync.core.yamlfile import MAX_NODES, Unreadable, load_data, over_limits

    text = _alias_bomb(levels, width, scalar)
    assert over_limits(text) == f"document expands to more than {MAX_NODES} nodes (YAML alias bomb?)"
    with pytest.raises(Unreadable, match="alias bomb"):
        load_data(text)
    with pytest.raises(ValueError, match="alias bomb"):
        parse_document(text)


def _nested(depth: int, form: str) -> str:
    if form == "json":
        return '{"openapi": "3.0.0", "x": ' + "[" * depth + "]" * depth + "}"
    if form == "flow":
        return "openapi: 3.0.0\nx: " + "{a: " * depth + "b" + "}" * depth + "\n"
    if form == "block":  # each level one more space, as a person (or a generator) indents
        return "openapi: 3.0.0\nx:\n" + "".join(f"{' ' * (i + 1)}k{i}:\n" for i in range(depth)) + " " * (depth + 1) + "v\n"
    # an alias nests what it names again: 20 x 20 levels, from a small and shallow-looking text
    return "a0: &a0 [x]\n" + "".join(f"a{i}: &a{i} [[[[[[[[[[[[[[[[[[[[*a{i - 1}]]]]]]]]]]]]]]]]]]]]\n" for i in range(1, depth))


@settings(max_examples=40, deadline=5000)
@given(depth=st.integers(201, 30_000), form=st.sampled_from(["json", "flow", "block", "alias"]))
@example(depth=30_000, form="json").via("finding 2: a 30,000-deep schema")
@example(depth=30_000, form="flow")
def test_a_document_nested_too_deep_is_refused_without_recursion_error(depth: int, form: str) -> None:
    """Finding 2: a schema nested 30,000 deep was 'internal error: RecursionError'."""
    from cesync.core.yamlfile import MAX_DEPTH, Unreadable, load_data

    if form == "block":
        depth = min(depth, 2_000)  # the text grows as depth squared
    if form == "alias":
        depth = 11 + depth % 20
    with pytest.raises(Unreadable, match=f"nested deeper than {MAX_DEPTH} levels"):
        load_data(_nested(depth, form))
    if form != "json":
        found = load_text(_nested(depth, form), "f.yaml")
        assert not isinstance(found, Document) and "deeper" in found.message


@settings(max_examples=30, deadline=None)
@given(depth=st.integers(1, 198), form=st.sampled_from(["json", "flow", "block"]))  # the document itself is a level
def test_a_document_within_the_limits_is_read(depth: int, form: str) -> None:
    from cesync.core.yamlfile import load_data

    data = load_data(_nested(depth, form))
    assert data["openapi"] == "3.0.0"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("openapi: 3.0.3\npaths: {\n", "at line 3: the file ends inside a '[' or '{' that is never closed"),
        ("openapi: 3.0.3\nservers: [{url: x}\ninfo: {}\n", "at line 2: this '[' is not closed by a ']'"),
        ("openapi: 3.0.3\nopenapi: 3.1.0\n", "at line 2: the key 'openapi' is written twice"),
    ],
)
def test_a_document_inside_a_resource_is_said_in_the_same_words(text: str, words: str) -> None:
    """An OpenAPI file a toolset includes: the repo file's words, not the parser's."""
    from cesync.core.yamlfile import Unreadable, load_data

    with pytest.raises(Unreadable) as raised:
        load_data(text)
    assert words in str(raised.value), raised.value
    assert not any(w in str(raised.value) for w in PARSER_WORDS)


def _load_data_two_parses(text: str) -> Any:
    """load_data's YAML path spelt the long way: every text's events counted (over_limits), then parsed."""
    from cesync.core.limits import over_limits
    from cesync.core.yamlfile import Unreadable, load_data

    if (over := over_limits(text)) is not None:
        raise Unreadable(over)
    return load_data.__wrapped__(text)  # the same text again: now under the limits, whichever way it is read


_ANCHORED = st.recursive(
    st.sampled_from(["x", "'y'", "long " * 80, "1", "[]", "{}", "*a", "*b", "&a q", "&b [*a, *a]"]),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.lists(st.tuples(st.sampled_from(["k", "m", "*a", "&a n", "x" * 300]), inner), max_size=4).map(
            lambda kv: (
                "{" + ", ".join(f"{k}{i}: {v}" if not k.startswith("*") else f"{k} : {v}" for i, (k, v) in enumerate(kv)) + "}"
            )
        ),
        st.tuples(st.sampled_from(["&a", "&b"]), inner).map(" ".join),
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(_ANCHORED, min_size=1, max_size=6), limit=st.integers(1, 60), depth=st.integers(1, 6))
def test_load_data_reads_once_what_two_parses_read(parts: list[str], limit: int, depth: int) -> None:
    """One parse whose walk counts nodes as over_limits does gives each text the data or the refusal
    that counting its events first gave, at any node and depth limit (aliases, keys and long text included)."""
    from cesync.core import limits, yamlfile
    from cesync.core.yamlfile import Unreadable, load_data

    text = "".join(f"f{i}: {part}\n" for i, part in enumerate(parts))
    outcomes = []
    with pytest.MonkeyPatch.context() as patch:
        for module in (limits, yamlfile):
            patch.setattr(module, "MAX_NODES", limit)
            patch.setattr(module, "MAX_DEPTH", depth)
        for read in (load_data.__wrapped__, _load_data_two_parses):
            try:
                outcomes.append(("data", read(text)))
            except Unreadable as exc:
                outcomes.append(("unreadable", str(exc)))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("text", ['"\\ud800": 1\n', 'a: "\\udc00x"\n', '- "\\ud800"\n', 'k: ["\\ud83d"]\n', '"x\\ud800y": {}\n'])
def test_an_unpaired_surrogate_in_a_key_or_value_takes_ruamels_path(text: str) -> None:
    """Only ASCII skips the check: a key or value holding an unpaired surrogate is ruamel's to report."""
    assert fast_load(text) is SLOW
    assert fast_load(text.replace("\\ud800", "\\u00e9").replace("\\udc00", "\\u00e9").replace("\\ud83d", "\\u00e9")) is not SLOW
