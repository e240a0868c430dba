"""cesync fmt: one canonical layout, comments and meaning kept, idempotent; --check for CI."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from cesync.models import Tool
from cesync.repo.fmt import format_text
from cesync.repo.repo import load_repo
from tests.conftest import EXAMPLES
from tests.helpers import FIXTURES
from tests.pipeline.test_pull import cli

COMMENT = re.compile(r"#.*$", re.MULTILINE)


def _rendered(root: Path) -> dict[str, list[tuple[str, str, dict[str, object]]]]:
    repo = load_repo(root)
    return {env: [(d.kind.name, d.id, d.body) for d in repo.render(repo.env(env))] for env in repo.env_names}


def _comments(root: Path) -> list[str]:
    return sorted(m.strip() for p in root.rglob("*.yaml") for m in COMMENT.findall(p.read_text()) if "$schema" not in m)


def test_fmt_keeps_meaning_and_comments_and_is_idempotent(tmp_path: Path) -> None:
    for source in (EXAMPLES / "support-bot", FIXTURES / "pull"):
        root = tmp_path / source.name
        shutil.copytree(source, root, ignore=shutil.ignore_patterns(".cesync"))
        before, comments = _rendered(root), _comments(root)
        r = cli("fmt", "--dir", str(root))
        assert r.exit_code == 0, r.output
        assert _rendered(root) == before and _comments(root) == comments
        snapshot = {p: p.read_text() for p in root.rglob("*.yaml")}
        again = cli("fmt", "--dir", str(root), "--check")
        assert again.exit_code == 0 and "ok:" in again.output
        assert cli("fmt", "--dir", str(root)).exit_code == 0
        assert {p: p.read_text() for p in root.rglob("*.yaml")} == snapshot


def test_fmt_check_lists_files_and_writes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "pull", root)
    tool = root / "tools" / "ask.yaml"
    original = tool.read_text()
    tool.write_text("executionType: ASYNCHRONOUS\n" + original.replace("executionType: ASYNCHRONOUS\n", ""))
    shuffled = tool.read_text()
    r = cli("fmt", "--dir", str(root), "--check")
    assert r.exit_code == 1 and "would reformat tools/ask.yaml" in r.output and "not in the canonical layout" in r.output
    assert tool.read_text() == shuffled


def test_a_file_fmt_cannot_parse_is_named_as_validate_names_it(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "pull", root)
    (root / "tools" / "tab.yaml").write_text("pythonFunction:\n\tname: x\n")
    r = cli("fmt", "--dir", str(root), "--check")
    assert r.exit_code == 1, r.output
    assert "tools/tab.yaml:2:1: invalid YAML: tab character: YAML indents with spaces only; not formatted" in r.output


KEYS = {
    "executionType": "executionType: ASYNCHRONOUS\n",
    "timeout": "timeout: 45s  # slow\n",
    "clientFunction": "clientFunction:\n  # the function\n  description: Ask.\n  name: ask\n",
    "toolFakeConfig": "toolFakeConfig:\n  enableFakeMode: true\n",
}


@settings(max_examples=25, deadline=None)
@given(st.permutations(sorted(KEYS)))
def test_any_key_order_formats_to_the_same_text(order: list[str]) -> None:
    text = "".join(KEYS[k] for k in order)
    canonical = format_text("".join(KEYS[k] for k in sorted(KEYS)), Tool)
    assert format_text(text, Tool) == canonical
    assert [line.split(":")[0] for line in canonical.splitlines() if line and line[0].isalpha()] == [
        "clientFunction",
        "executionType",
        "timeout",
        "toolFakeConfig",
    ]


NESTED = {  # clientFunction's keys, each with a comment above it
    "name": "  # about name\n  name: ask\n",
    "description": "  # about description\n  description: Ask.\n",
    "parameters": "  # about parameters\n  parameters:\n    type: OBJECT\n",
}
COMMENTED = {
    "executionType": "# about executionType\nexecutionType: ASYNCHRONOUS  # eol executionType\n",
    "timeout": "# about timeout\n\ntimeout: 45s\n",
    "toolFakeConfig": "# about toolFakeConfig\ntoolFakeConfig:\n  enableFakeMode: true  # eol fake\n",
    "clientFunction": "# about clientFunction\nclientFunction:\n",
}


def _key_after(lines: list[str], i: int) -> str:
    """The key of the first line after lines[i] that is neither a comment nor blank."""
    rest = [line for line in lines[i + 1 :] if line.strip() and not line.lstrip().startswith("#")]
    return rest[0].split(":")[0].strip() if rest else ""


@settings(max_examples=40, deadline=None)
@given(st.permutations(sorted(COMMENTED)), st.permutations(sorted(NESTED)))
def test_comments_move_with_their_keys(order: list[str], nested: list[str]) -> None:
    """A full-line comment above a key stays above that key, and an end-of-line comment on its
    line, whatever the order was; ruamel files such comments under the preceding key (or the last
    item of its value), which is where fmt used to leave them. The first key's comment is the
    file's (or the mapping's) header and stays first."""
    text = "# header\n" + "".join(
        COMMENTED[k] + ("".join(NESTED[n] for n in nested) if k == "clientFunction" else "") for k in order
    )
    out = format_text(text, Tool)
    lines = out.splitlines()
    assert out == format_text(out, Tool)
    assert lines[0] == "# header"
    for key in [k for k in order[1:]] + [n for n in nested[1:]]:
        [i] = [i for i, line in enumerate(lines) if line.strip() == f"# about {key}"]
        assert _key_after(lines, i) == key, out
    for key in ("executionType", "fake"):
        [line] = [line for line in lines if f"# eol {key}" in line]
        assert line.split(":")[0].strip() == {"fake": "enableFakeMode"}.get(key, key), out
    assert sorted(COMMENT.findall(out)) == sorted(COMMENT.findall(text))


def test_crlf_files_keep_their_line_endings(tmp_path: Path) -> None:
    """A Windows checkout (git autocrlf) is not 'not canonical', and fmt does not turn it into LF."""
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "pull", root)
    assert cli("fmt", "--dir", str(root)).exit_code == 0
    tool = root / "tools" / "ask.yaml"
    for path in root.rglob("*.yaml"):
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    r = cli("fmt", "--dir", str(root), "--check")
    assert r.exit_code == 0, r.output
    text = tool.read_bytes().decode()
    tool.write_bytes(("executionType: ASYNCHRONOUS\r\n" + text.replace("executionType: ASYNCHRONOUS\r\n", "")).encode())
    assert cli("fmt", "--dir", str(root)).exit_code == 0
    assert tool.read_bytes().decode() == text


def test_the_examples_are_in_the_canonical_layout() -> None:
    """What users copy passes the pre-commit hook docs/ci-cd.md recommends (cesync fmt --check)."""
    from cesync.repo.fmt import format_repo

    repos = [p.parent for p in EXAMPLES.rglob("cesync.yaml")]
    assert repos
    for root in repos:
        changed, problems = format_repo(root)
        assert (sorted(changed), problems) == ([], []), root


VALUES = ["X", "|\n  line one\n  line two", "|+\n  kept\n", ">-\n  folded", "[a, b]", "{model: m}", "'quoted'", "[]"]
BETWEEN = ["", "\n", "# note\n", "  # indented note\n", "# a\n\n# b\n"]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["description", "displayName", "instruction", "tools", "modelSettings"]),
            st.sampled_from(VALUES),
            st.sampled_from(["", "  # eol"]),
            st.sampled_from(BETWEEN),
        ),
        min_size=1,
        max_size=5,
        unique_by=lambda t: t[0],
    ),
    st.sampled_from(BETWEEN),
)
def test_fmt_never_changes_data_and_is_idempotent(entries: list[tuple[str, str, str, str]], tail: str) -> None:
    """Comments next to block scalars, flow collections and blank lines: whatever fmt writes
    holds the same data (a '# note' after a '|' text must not become text) and is a fixed point."""
    from cesync.models import Agent

    safe = YAML(typ="safe", pure=True)
    text = "".join(f"{between}{key}: {value}{eol}\n" for key, value, eol, between in entries) + tail
    try:
        data = safe.load(text)
    except YAMLError:  # an invalid combination (a comment inside a flow value, say): not fmt's case
        return
    out = format_text(text, Agent)
    assert safe.load(out) == data, (text, out)
    assert format_text(out, Agent) == out, (text, out)


def test_a_file_over_the_limits_is_named_not_formatted(tmp_path: Path) -> None:
    """The limits of every document cesync reads (issue #34 item 1) hold for fmt's round-trip
    parse too: an alias bomb or a deep nest is one problem, never a hang or a RecursionError."""
    from cesync.repo.fmt import format_repo

    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "pull", root)
    bomb = "clientFunction:\n  name: f\n  x0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"  x{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 10)
    )
    (root / "tools" / "bomb.yaml").write_text(bomb)
    (root / "tools" / "deep.yaml").write_text("clientFunction:\n  name: g\n  x: " + "[" * 5000 + "]" * 5000 + "\n")
    _, problems = format_repo(root)
    said = {p.file: p.message for p in problems}
    assert "alias bomb" in said["tools/bomb.yaml"] and "nested deeper" in said["tools/deep.yaml"], said
