"""cesync pull: a console edit comes back into the repo as a minimal edit, and plan is empty after."""

from __future__ import annotations

import difflib
import itertools
import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cesync.cli import main
from cesync.core.yamlfile import load_text
from cesync.emulator.server import BackgroundServer
from cesync.errors import Problem
from tests.helpers import FIXTURES

PARENT = "projects/p/locations/us/apps/{app}"
_apps = itertools.count()


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def fresh_repo(tmp: Path, emulator: BackgroundServer) -> tuple[Path, str]:
    """A copy of the fixture on an app of its own, applied to the emulator."""
    app = f"pull-app-{next(_apps)}"
    root = tmp / app
    shutil.copytree(FIXTURES / "pull", root)
    config = root / "cesync.yaml"
    config.write_text(config.read_text().replace("app: pull-app ", f"app: {app} "))
    r = cli("apply", "--dir", str(root), "--endpoint", emulator.url, "--auto-approve")
    assert r.exit_code == 0, r.output
    return root, PARENT.format(app=app)


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file() and ".cesync" not in p.parts}


def console_edit(emulator: BackgroundServer, name: str, mask: str, change: Callable[[dict[str, Any]], None]) -> None:
    """What a console user does: read the resource, change a field, PATCH it with the etag."""
    url = f"{emulator.url}/v1/{name}"
    body = httpx.get(url).json()
    change(body)
    r = httpx.patch(url, params={"updateMask": mask}, json=body)
    assert r.status_code == 200, r.text


def changed_lines(before: str, after: str) -> tuple[list[str], list[str]]:
    removed, added = [], []
    for line in difflib.ndiff(before.splitlines(), after.splitlines()):
        if line.startswith("- "):
            removed.append(line[2:])
        elif line.startswith("+ "):
            added.append(line[2:])
    return removed, added


def value_span(text: str, path: tuple[str, ...]) -> tuple[int, int]:
    """0-based [start, end) of the lines a key's value takes (its line and the deeper ones after it)."""
    doc = load_text(text, "f")
    assert not isinstance(doc, Problem)
    line, col = doc.positions.keys[path]
    lines = text.splitlines()
    end = line
    while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) >= col):
        end += 1
    while end > line and not lines[end - 1].strip():
        end -= 1
    return line - 1, end


def plan_is_empty(root: Path, emulator: BackgroundServer) -> None:
    r = cli("plan", "--dir", str(root), "--endpoint", emulator.url, "--detailed-exitcode")
    assert r.exit_code == 0, r.output
    assert "No changes" in r.output


def _set(path: list[str], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(body: dict[str, Any]) -> None:
        node = body
        for p in path[:-1]:
            node = node[p]
        node[path[-1]] = value

    return change


def _schema_title(field: str, title: str) -> Callable[[dict[str, Any]], None]:
    def change(body: dict[str, Any]) -> None:
        spec = body[field]
        text = spec["openApiSchema"]
        if text.lstrip().startswith("{"):
            doc = json.loads(text)
            doc["info"]["title"] = title
            spec["openApiSchema"] = json.dumps(doc)
        else:
            spec["openApiSchema"] = text.replace("title: Weather", f"title: {json.dumps(title)}")

    return change


@dataclass(frozen=True)
class Edit:
    """One scalar field a console user can change, and where the value lives in the repo."""

    resource: str  # tools/x or toolsets/y
    mask: str
    file: str  # the file whose lines change
    make: Callable[[str], Callable[[dict[str, Any]], None]]
    path: tuple[str, ...] = ()  # the key whose value moves, in a YAML file; () for one line of code or JSON
    expect_in_file: Callable[[str], str] = lambda v: v


EDITS = {
    "client description": Edit(
        "tools/ask",
        "clientFunction.description",
        "tools/ask.yaml",
        lambda v: _set(["clientFunction", "description"], v),
        ("clientFunction", "description"),
    ),
    "nested property description": Edit(
        "tools/ask",
        "clientFunction.parameters",
        "tools/ask.yaml",
        lambda v: _set(["clientFunction", "parameters", "properties", "urgent", "description"], v),
        ("clientFunction", "parameters", "properties", "urgent", "description"),
    ),
    "openapi toolset description": Edit(
        "toolsets/weather", "description", "toolsets/weather.yaml", lambda v: _set(["description"], v), ("description",)
    ),
    "toolset description": Edit(
        "toolsets/shop", "description", "toolsets/shop.yaml", lambda v: _set(["description"], v), ("description",)
    ),
    "python code (include)": Edit(
        "tools/greet",
        "pythonFunction.pythonCode",
        "code/greet.py",
        lambda v: (
            lambda body: body["pythonFunction"].update(
                pythonCode=body["pythonFunction"]["pythonCode"].replace('"Hello "', json.dumps(v))
            )
        ),
        expect_in_file=lambda v: json.dumps(v),
    ),
    "yaml schema title (include)": Edit(
        "toolsets/weather",
        "openApiToolset.openApiSchema",
        "schemas/weather.yaml",
        lambda v: _schema_title("openApiToolset", v),
        ("info", "title"),
    ),
    "json schema title (include)": Edit(
        "toolsets/shop",
        "openApiToolset.openApiSchema",
        "schemas/shop.json",
        lambda v: _schema_title("openApiToolset", v),
        expect_in_file=lambda v: json.dumps(v, ensure_ascii=False),
    ),
}

# Text a console user could type: letters, digits and the characters YAML, JSON and
# cesync's ${VAR} syntax care about.
TEXT = st.text(alphabet=st.sampled_from("abcXYZ019 -_.,:#'\"${}[]&*!|>%@`\\é→"), min_size=1, max_size=24).filter(
    lambda s: s.strip() == s and s.strip()
)


def pullable(name: str, value: str) -> bool:
    """Whether the repo can hold value where the edit puts it: a ${NAME} in an included file is a
    problem validate reports (included files are not templated), and pull refuses to write it
    (test_a_reference_typed_into_an_included_schema_is_refused)."""
    return "(include)" not in name or not re.search(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}", value)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(sorted(EDITS)), value=TEXT)
def test_a_console_edit_comes_back_as_a_minimal_edit(
    tmp_path_factory: pytest.TempPathFactory, emulator: BackgroundServer, name: str, value: str
) -> None:
    assume(pullable(name, value))
    edit = EDITS[name]
    root, parent = fresh_repo(tmp_path_factory.mktemp("pull"), emulator)
    before = snapshot(root)
    console_edit(emulator, f"{parent}/{edit.resource}", edit.mask, edit.make(value))

    r = cli("pull", "--dir", str(root), "--endpoint", emulator.url)
    assert r.exit_code == 0, r.output
    after = snapshot(root)
    assert set(after) == set(before)
    for rel in before:
        if rel != edit.file:
            assert after[rel] == before[rel], f"{rel} changed but the edit was in {edit.file}"
    old, new = before[edit.file].splitlines(), after[edit.file].splitlines()
    if edit.path:  # only the lines of the edited value moved
        start, end = value_span(before[edit.file], edit.path)
        ops = difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
        moved = [(i1, i2) for tag, i1, i2, _, _ in ops if tag != "equal"]
        assert moved and all(start <= i1 and i2 <= end for i1, i2 in moved), (moved, start, end)
    else:  # code and JSON: the one line that holds the value
        removed, added = changed_lines(before[edit.file], after[edit.file])
        assert len(removed) == len(added) == 1, (removed, added)
        assert edit.expect_in_file(value) in added[0]
    plan_is_empty(root, emulator)


def test_variables_stay_or_are_reported(tmp_path: Path, emulator: BackgroundServer) -> None:
    root, parent = fresh_repo(tmp_path, emulator)
    before = snapshot(root)
    # The remote equals the rendering of a ${VAR}: the placeholder stays, nothing changes.
    r = cli("pull", "--dir", str(root), "--endpoint", emulator.url)
    assert r.exit_code == 0 and snapshot(root) == before, r.output

    console_edit(
        emulator,
        f"{parent}/tools/search",
        "googleSearchTool.description",
        _set(["googleSearchTool", "description"], "Hi, searcher"),
    )
    r = cli("pull", "--dir", str(root), "--endpoint", emulator.url)
    assert r.exit_code == 1
    assert "tools/search.yaml:3:" in r.output and "defaults.vars.GREETING to 'Hi'" in r.output
    assert snapshot(root) == before  # nothing written when a check fails

    console_edit(emulator, f"{parent}/tools/search", "googleSearchTool.name", _set(["googleSearchTool", "name"], "web2"))
    r = cli("pull", "--dir", str(root), "--endpoint", emulator.url)
    assert "environments.local.vars.SEARCH_NAME to 'web2'" in r.output

    r = cli("pull", "--dir", str(root), "--endpoint", emulator.url, "--inline")
    assert r.exit_code == 0, r.output
    removed, added = changed_lines(before["tools/search.yaml"], snapshot(root)["tools/search.yaml"])
    assert removed == ["  name: ${SEARCH_NAME}", "  description: '${GREETING}, searcher'   # quoted on purpose"]
    assert (
        added[0] == "  name: web2" and added[1].startswith("  description: 'Hi, searcher'") and "# quoted on purpose" in added[1]
    )
    plan_is_empty(root, emulator)


def test_new_and_gone_resources_dry_run_and_prune(tmp_path: Path, emulator: BackgroundServer) -> None:
    root, parent = fresh_repo(tmp_path, emulator)
    before = snapshot(root)
    created = httpx.post(
        f"{emulator.url}/v1/{parent}/tools", params={"toolId": "made-by-hand"}, json={"clientFunction": {"name": "by_hand"}}
    )
    assert created.status_code == 200, created.text
    assert httpx.delete(f"{emulator.url}/v1/{parent}/tools/greet").status_code == 200

    dry = cli("pull", "--dir", str(root), "--endpoint", emulator.url, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "+++ b/tools/made-by-hand.yaml" in dry.output and "+  name: by_hand" in dry.output
    assert "gone from the app (pass --prune to delete its file): tool/greet (tools/greet.yaml)" in dry.output
    assert snapshot(root) == before

    r = cli("pull", "--dir", str(root), "--endpoint", emulator.url)
    assert r.exit_code == 0, r.output
    assert (root / "tools/made-by-hand.yaml").is_file() and (root / "tools/greet.yaml").is_file()
    assert not (root / "schemas" / "tool.schema.json").exists()  # no modeline without the schema it would name
    assert "yaml-language-server" not in (root / "tools/made-by-hand.yaml").read_text()

    pruned = cli("pull", "--dir", str(root), "--endpoint", emulator.url, "--prune", "--dry-run")
    assert "+++ /dev/null" in pruned.output and "--- a/code/greet.py" in pruned.output
    r = cli("pull", "--dir", str(root), "--endpoint", emulator.url, "--prune")
    assert r.exit_code == 0, r.output
    assert not (root / "tools/greet.yaml").exists() and not (root / "code/greet.py").exists()
    plan_is_empty(root, emulator)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a:\n  b: 1\n", (2, 4, 2)),
        ("a:\n    b: 1\n", (4, 4, 2)),
        # a mapping nested in a sequence item is indented from the item's key, not from its dash
        ("rules:\n  - when:\n      x: 1\n    to: y\n", (2, 4, 2)),
    ],
)
def test_indents_are_read_as_the_file_writes_them(text: str, expected: tuple[int, int, int]) -> None:
    from cesync.core.roundtrip import indents as _indents

    assert _indents(text) == expected


def test_pull_refuses_an_app_that_does_not_exist(tmp_path: Path) -> None:
    """A typo in the app's name must not read as "everything is gone": --prune would delete the whole repo."""
    with BackgroundServer(auto_create_apps=False) as emulator:
        root = tmp_path / "repo"
        shutil.copytree(FIXTURES / "pull", root)
        config = root / "cesync.yaml"
        config.write_text(config.read_text().replace("app: pull-app ", "app: no-such-app "))
        before = snapshot(root)
        for extra in ((), ("--prune",), ("--prune", "--dry-run")):
            r = CliRunner().invoke(main, ["pull", "--dir", str(root), "--endpoint", emulator.url, *extra])
            assert r.exit_code == 1, r.output
            assert "apps/no-such-app does not exist" in r.output and "nothing was written" in r.output
            assert r.exception is None or isinstance(r.exception, SystemExit)
        assert snapshot(root) == before


def test_target_limits_the_pull(tmp_path: Path, emulator: BackgroundServer) -> None:
    root, parent = fresh_repo(tmp_path, emulator)
    console_edit(emulator, f"{parent}/tools/ask", "clientFunction.description", _set(["clientFunction", "description"], "A"))
    console_edit(emulator, f"{parent}/toolsets/shop", "description", _set(["description"], "B"))
    r = cli("pull", "--dir", str(root), "--endpoint", emulator.url, "--target", "toolsets/shop")
    assert r.exit_code == 0, r.output
    assert "description: B" in (root / "toolsets/shop.yaml").read_text()
    assert "Ask the user" in (root / "tools/ask.yaml").read_text()
    r = cli("pull", "--dir", str(root), "--endpoint", emulator.url, "--target", "tools/shopp")
    assert r.exit_code == 1 and "did you mean 'toolsets/shop'" in r.output


def test_official_client_edit_comes_back(tmp_path: Path, emulator: BackgroundServer) -> None:
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import ces_v1
    from google.protobuf import field_mask_pb2

    root, parent = fresh_repo(tmp_path, emulator)
    client = ces_v1.AgentServiceClient(
        credentials=AnonymousCredentials(), transport="rest", client_options=ClientOptions(api_endpoint=emulator.url)
    )
    tool = client.get_tool(name=f"{parent}/tools/greet")
    tool.timeout = {"seconds": 7}
    client.update_tool(tool=tool, update_mask=field_mask_pb2.FieldMask(paths=["timeout"]))
    before = (root / "tools/greet.yaml").read_text()
    r = cli("pull", "--dir", str(root), "--endpoint", emulator.url)
    assert r.exit_code == 0, r.output
    assert changed_lines(before, (root / "tools/greet.yaml").read_text()) == (['timeout: "1.5s"'], ['timeout: "7s"'])
    plan_is_empty(root, emulator)


def test_line_endings_and_bom_survive_a_pull(tmp_path: Path, emulator: BackgroundServer) -> None:
    """A CRLF tool file keeps CRLF and its BOM: only the edited line differs, in the dry run too."""
    root, parent = fresh_repo(tmp_path, emulator)
    ask = root / "tools/ask.yaml"
    ask.write_bytes(b"\xef\xbb\xbf" + ask.read_bytes().replace(b"\n", b"\r\n"))
    before = ask.read_bytes()
    console_edit(emulator, f"{parent}/tools/ask", "clientFunction.name", _set(["clientFunction", "name"], "ask_person"))

    dry = cli("pull", "--dir", str(root), "--endpoint", emulator.url, "--dry-run")
    assert dry.exit_code == 0, dry.output
    changed = [line for line in dry.output.splitlines() if line[:1] in "+-" and line[:3] not in ("---", "+++")]
    assert changed == ["-  name: ask_user", "+  name: ask_person"], dry.output
    r = cli("pull", "--dir", str(root), "--endpoint", emulator.url)
    assert r.exit_code == 0, r.output
    after = ask.read_bytes()
    assert after.startswith(b"\xef\xbb\xbf")
    assert after.count(b"\n") == after.count(b"\r\n"), "the file lost its CRLF line endings"
    assert [line for line in after.splitlines() if line not in before.splitlines()] == [b"  name: ask_person"]
    plan_is_empty(root, emulator)


@pytest.mark.parametrize("name", ["python code (include)", "yaml schema title (include)", "json schema title (include)"])
def test_an_included_crlf_file_keeps_its_line_endings(tmp_path: Path, emulator: BackgroundServer, name: str) -> None:
    """A .py or OpenAPI file checked out with CRLF (git autocrlf on Windows): a pull changes the
    edited line only, never every line's ending."""
    edit = EDITS[name]
    root, parent = fresh_repo(tmp_path, emulator)
    included = root / edit.file
    included.write_bytes(included.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
    before = included.read_bytes()
    console_edit(emulator, f"{parent}/{edit.resource}", edit.mask, edit.make("Console"))
    r = cli("pull", "--dir", str(root), "--endpoint", emulator.url)
    assert r.exit_code == 0, r.output
    after = included.read_bytes()
    assert after != before
    assert after.count(b"\n") == after.count(b"\r\n"), "the included file lost its CRLF line endings"
    assert len(set(after.splitlines()) - set(before.splitlines())) == 1, after
    plan_is_empty(root, emulator)


def test_pull_writes_only_inside_the_repo(tmp_path: Path) -> None:
    # A pull request can commit a symlinked folder (code -> ~/.ssh) or a symlink named like pull's
    # temporary file; a later pull must not write through either.
    from cesync.errors import CesyncError
    from cesync.repo.files import write_files

    root, outside = tmp_path / "repo", tmp_path / "outside"
    (root / "tools").mkdir(parents=True)
    outside.mkdir()
    victim = outside / "victim"
    victim.write_text("keep\n")
    (root / "code").symlink_to(outside)
    (root / "tools" / ".x.yaml.cesync-tmp").symlink_to(victim)
    with pytest.raises(CesyncError, match="outside the repo"):
        write_files(root, {"code/new.py": "evil\n", "tools/x.yaml": "new\n"})
    assert sorted(p.name for p in outside.iterdir()) == ["victim"]
    write_files(root, {"tools/x.yaml": "new\n"})
    assert victim.read_text() == "keep\n"
    assert (root / "tools" / "x.yaml").read_text() == "new\n"


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(sorted(EDITS)), value=TEXT)
def test_a_conflict_leaves_only_its_resource_and_the_rest_is_pulled(
    tmp_path_factory: pytest.TempPathFactory, emulator: BackgroundServer, name: str, value: str
) -> None:
    """One resource whose remote text no value of its ${VAR} can produce: every other console edit
    still comes back (and is shown by --dry-run), the conflict is reported with the right hint, exit 1."""
    assume(pullable(name, value))
    edit = EDITS[name]
    root, parent = fresh_repo(tmp_path_factory.mktemp("pull"), emulator)
    before = snapshot(root)
    console_edit(emulator, f"{parent}/{edit.resource}", edit.mask, edit.make(value))
    console_edit(  # the text around ${GREETING} changed: no value of GREETING renders this
        emulator, f"{parent}/tools/search", "googleSearchTool.description", _set(["googleSearchTool", "description"], "Bye")
    )
    dry = cli("pull", "--dir", str(root), "--endpoint", emulator.url, "--dry-run")
    assert dry.exit_code == 1 and f"+++ b/{edit.file}" in dry.output and "search.yaml" not in dry.output.split("pull: ")[0]
    assert snapshot(root) == before
    r = cli("pull", "--dir", str(root), "--endpoint", emulator.url)
    assert r.exit_code == 1, r.output
    [problem] = [line for line in r.output.splitlines() if line.startswith("tools/search.yaml:3:")]
    assert "no value of GREETING can produce it" in problem and "set defaults.vars" not in problem, problem
    assert "1 left as they are" in r.output
    after = snapshot(root)
    assert after["tools/search.yaml"] == before["tools/search.yaml"] and after[edit.file] != before[edit.file]
    plan = cli("plan", "--dir", str(root), "--endpoint", emulator.url, "--format", "json")
    assert [c["id"] for c in json.loads(plan.output)["changes"]] == ["search"]  # only the conflict is left


@pytest.mark.parametrize("value", ["${X}", "at ${API_URL} now"])
def test_a_reference_typed_into_an_included_schema_is_refused(tmp_path: Path, emulator: BackgroundServer, value: str) -> None:
    """${NAME} in an included file would be a problem of the repo (validate: included files are not
    templated): pull writes nothing and says where, rather than leave a repo that does not validate."""
    edit = EDITS["json schema title (include)"]
    root, parent = fresh_repo(tmp_path, emulator)
    before = snapshot(root)
    console_edit(emulator, f"{parent}/{edit.resource}", edit.mask, edit.make(value))
    r = cli("pull", "--dir", str(root), "--endpoint", emulator.url)
    assert r.exit_code == 1
    assert f"{edit.file}:" in r.output and "would reach CES as written" in r.output
    assert snapshot(root) == before
