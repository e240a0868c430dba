"""docs/contributing/adding-a-kind.md is followed as written, so the guide cannot rot.

Each ``<!-- guide: ... -->`` comment of the page says what the code block after it is: the
registry's own entry for a kind (which must be in api/kinds.py as shown), an edit (a block
inserted into a file of a copy of src/cesync, before or after a text that must occur once),
a file of a repo, or the commands to run in that repo. The test copies src/cesync to
tmp_path, makes the edits, and runs the commands in a subprocess with the copy first on
PYTHONPATH, against the copy's embedded emulator: the new kind must validate, plan, apply
and plan empty. A kind field the page does not explain fails too.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import shutil
import textwrap
from dataclasses import dataclass
from pathlib import Path

from cesync.api.kinds import ResourceKind
from tests.conftest import ROOT
from tests.helpers import cesync_process, make_repo

GUIDE = ROOT / "docs" / "contributing" / "adding-a-kind.md"
# The comment, other comments (docs-test's), the fence.
MARKED = re.compile(
    r"^[ \t]*<!-- guide: (?P<what>.*?) -->\n(?:[ \t]*<!--[^\n]*-->\n)*[ \t]*```[^\n]*\n(?P<code>.*?)^[ \t]*```", re.M | re.S
)
INSERT = re.compile(r'insert into (?P<file>\S+) (?P<where>before|after) (?P<anchor>"(?:[^"\\]|\\.)*")\Z')


@dataclass(frozen=True)
class Block:
    what: str
    code: str


def blocks() -> list[Block]:
    text = GUIDE.read_text(encoding="utf-8")
    return [Block(m["what"], textwrap.dedent(m["code"])) for m in MARKED.finditer(text)]


def _insert(root: Path, what: str, code: str) -> None:
    m = INSERT.match(what)
    assert m, f"a guide comment this test does not know: {what!r}"
    path = root / m["file"]
    anchor = json.loads(m["anchor"])
    text = path.read_text(encoding="utf-8")
    assert text.count(anchor) == 1, f"{m['file']} must hold {anchor!r} once (the guide says where the block goes)"
    at = text.index(anchor) + (len(anchor) if m["where"] == "after" else 0)
    path.write_text(text[:at] + code + text[at:], encoding="utf-8")


def _commands(code: str) -> list[tuple[list[str], str]]:
    """(argv, what its output says) for each line: ``cesync plan   # No changes.``"""
    out = []
    for line in code.splitlines():
        command, _, said = line.partition("#")
        if command.strip():
            out.append((shlex.split(command), said.strip()))
    return out


def test_the_guide_names_every_field_of_a_kind() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    missing = [f.name for f in dataclasses.fields(ResourceKind) if f"| `{f.name}` |" not in text]
    assert not missing, f"docs/contributing/adding-a-kind.md does not explain {missing}"


def test_the_guides_registry_entries_are_the_registrys() -> None:
    shown = [b for b in blocks() if b.what.startswith("registry ")]
    assert shown
    source = (ROOT / "src" / "cesync" / "api" / "kinds.py").read_text(encoding="utf-8")
    entries = {" ".join(e.split()) for e in re.findall(r"^    ResourceKind\(\n.*?^    \),", source, re.M | re.S)}
    for block in shown:
        assert " ".join(block.code.split()) in entries, f"the guide's {block.what} is not the registry's entry"


def test_a_kind_added_as_the_guide_says_validates_plans_and_applies(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "cesync", src / "cesync", ignore=shutil.ignore_patterns("__pycache__"))
    steps = blocks()
    files: dict[str, str] = {}
    runs: list[str] = []
    for block in steps:
        if block.what.startswith("insert into "):
            _insert(src, block.what.replace("insert into src/", "insert into ", 1), block.code)
        elif block.what.startswith("repo file "):
            files[block.what.removeprefix("repo file ")] = block.code
        elif block.what == "run in the repo":
            runs.append(block.code)
    assert len([b for b in steps if b.what.startswith("insert into ")]) >= 2 and files and runs, "the worked example lost a step"
    repo = make_repo(tmp_path, files)
    env = {"PYTHONPATH": str(src)}
    for code in runs:
        for argv, said in _commands(code):
            assert argv[0] == "cesync", argv
            done = cesync_process(*argv[1:], cwd=repo, env=env)  # a new interpreter: the copy, not this one
            assert done.returncode == 0, f"{' '.join(argv)}: {done.stdout}{done.stderr}"
            if said:
                assert said.lstrip("+ ") in done.stdout, f"{' '.join(argv)} does not say {said!r}:\n{done.stdout}"
