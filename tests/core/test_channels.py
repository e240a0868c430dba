"""Every channel of every command that touches a sensitive value, with generated values.

The commands here (rollback, diff, exec, test, export, pull) are the ones whose output
comes from somewhere other than the repo's own render: a version's snapshot, another
environment's app, a tool's answer, the app's text written back into files. Each runs in
process (fast enough for generated cases); every run makes a scrubber of its own, so a
command passes only if it tells that scrubber what it touches itself.

Values are generated with quotes of both kinds, backslashes, unicode, newlines and YAML,
JSON and shell specials, short (the 4-character floor) and long; positions: alone, glued
to other text, inside a JSON or YAML document, in Python code.
"""

from __future__ import annotations

import base64
import html
import json
import shutil
import tempfile
from pathlib import Path
from urllib.parse import quote, quote_plus

from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from cesync.cli import main
from cesync.core.scrubber import Scrubber, forms
from cesync.core.sensitive import MASK
from tests.helpers import FIXTURES

# --- the safety net's forms (pure) -------------------------------------------------------------

CHARS = st.characters(min_codepoint=32, max_codepoint=0x2FFF, exclude_categories=("Cs",))
SPECIALS = ["'", '"', "'\"", "\\", "\\'", "\n", "é€😀", "${X}", "$", "&<>", "%2F", " +", ": #", "{}"]
value = st.builds(
    lambda a, s, b: f"{a}{s}{b}",
    st.text(CHARS, min_size=2, max_size=40),
    st.sampled_from(SPECIALS),
    st.text(CHARS, min_size=2, max_size=40),
)


def encodings(v: str) -> list[str]:
    """How outputs spell a value: each must be caught by the safety net."""
    raw = v.encode()
    return [
        v,
        json.dumps(v),
        json.dumps(v, ensure_ascii=False),
        json.dumps(json.dumps(v)),  # a request body quoted inside an error message
        repr(v),
        repr([v]),
        str({"k": v}),
        ascii(v),
        quote(v, safe=""),
        quote(v),
        quote_plus(v),
        "'" + v.replace("'", "''") + "'",  # YAML single-quoted
        html.escape(v),
        html.escape(v, quote=False),
    ] + [base64.b64encode(prefix + raw + b"tail").decode() for prefix in (b"", b"x", b"xy") if len(raw) >= 9]


@settings(max_examples=150, deadline=None)
@given(v=value, before=st.text(CHARS, max_size=8), after=st.text(CHARS, max_size=8))
def test_every_encoding_is_scrubbed(v: str, before: str, after: str) -> None:
    s = Scrubber([v])
    for spelled in encodings(v):
        text = before + spelled + after
        cleaned = s.scrub(text)
        assert MASK in cleaned and v not in cleaned, (spelled, text)
        assert s.leaks(text)


def test_python_repr_of_a_value_with_both_quotes() -> None:
    # Finding 7: repr() escapes the quote it is written in: 'abc\'def"ghi'
    v = "abc'def\"ghi"
    s = Scrubber([v])
    assert repr(v) == "'abc\\'def\"ghi'"
    assert s.scrub(f"got {v!r}") == f"got '{MASK}'"
    assert s.scrub(f"got {[v]!r} and {json.dumps({'a': v})}") == f'got [\'{MASK}\'] and {{"a": "{MASK}"}}'


def test_short_forms_are_left_alone() -> None:
    assert all(len(f) >= 4 for f in forms("abcd"))
    assert forms("abc") == set()


# --- the commands ------------------------------------------------------------------------------

CONFIG = """version: 1
defaults:
  sensitive: [TOKEN]
  project: p
  location: us
environments:
  dev:
    endpoint: embedded
    app: dev-app
    vars: {{TOKEN: {dev}}}
  prod:
    endpoint: embedded
    app: prod-app
    vars: {{TOKEN: {prod}}}
"""
TOOL = """openApiToolset:
  url: https://orders.example/v1?key=${TOKEN}
  openApiSchema: |
    openapi: 3.0.0
    info: {title: orders, version: "1"}
    servers: [{url: $env_var}]
    paths:
      /orders: {get: {operationId: list_orders, responses: {"200": {description: ok}}}}
"""
GLUED = """clientFunction:
  name: note
  description: "key${TOKEN}glued and ${TOKEN}"
"""
ECHO = """pythonFunction:
  name: echo
  pythonCode: |
    SECRET = r'''${TOKEN}'''
    def echo(x):
        return {"secret": SECRET, "glued": "k" + SECRET + "k", "x": x}
"""
TESTS = """tests:
  - name: echo shows the secret when it fails
    toolCall: {tool: echo, args: {x: 1}}
    toolResponse: {response: {result: {x: 2}}}
"""


def yaml_quoted(v: str) -> str:
    return json.dumps(v, ensure_ascii=False)


class Cli:
    """The CLI in process, each command with a scrubber of its own; every output kept."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, *args: str, code: int | None = 0, stdin: str | None = None, env: dict[str, str] | None = None) -> str:
        result = CliRunner().invoke(
            main, list(args), env={"NO_COLOR": "1", "CES_EMULATOR_HOST": None, **(env or {})}, input=stdin
        )
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        text = result.stdout + result.stderr
        self.seen.append(text)
        if code is not None:
            assert result.exit_code == code, text
        return text


def repo_with(tmp: Path, dev: str, prod: str, files: dict[str, str]) -> Path:
    root = tmp / "repo"
    shutil.copytree(FIXTURES / "minimal", root)
    (root / "cesync.yaml").write_text(CONFIG.format(dev=yaml_quoted(dev), prod=yaml_quoted(prod)), encoding="utf-8")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def assert_clean(texts: list[str], *values: str) -> None:
    for text in texts:
        for v in values:
            for spelled in {v, json.dumps(v)[1:-1], json.dumps(v, ensure_ascii=False)[1:-1], repr(v)[1:-1]}:
                assert spelled not in text, (spelled, text[:2000])


secret = st.builds(
    lambda core, special: f"s{core}{special}",
    st.text(
        st.characters(min_codepoint=48, max_codepoint=0x2FFF, exclude_categories=("Cs", "Zs", "Zl", "Zp", "Cc")),
        min_size=3,
        max_size=30,
    ),
    st.sampled_from(["'\"", "\\", "é😀", "&<", "''", "%", "=x"]),
)
# A few examples each (every one runs several commands); no shrinking: a failure prints its value.
few = settings(
    max_examples=3,
    deadline=None,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def _apply(cli: Cli, root: Path, env: str, *extra: str) -> None:
    cli("apply", "--dir", str(root), "--env", env, "--auto-approve", *extra)


@few
@given(old=secret, new=secret)
def test_rollback_shows_neither_the_current_nor_the_old_value(old: str, new: str) -> None:
    # Finding 3: the preview compared the snapshot with the app and registered nothing.
    if old == new:
        new += "2"
    with tempfile.TemporaryDirectory() as tmp:
        root = repo_with(Path(tmp), old, "unused-prod", {"toolsets/orders.yaml": TOOL, "tools/note.yaml": GLUED})
        cli = Cli()
        _apply(cli, root, "dev")
        (root / "cesync.yaml").write_text(CONFIG.format(dev=yaml_quoted(new), prod='"unused-prod"'), encoding="utf-8")
        _apply(cli, root, "dev", "--snapshot")  # the secret is rotated: the snapshot, made first, holds the old one
        listed = cli("versions", "--dir", str(root), "--env", "dev").splitlines()
        version = next(line for line in listed if line.strip() and "cesync applied" not in line).split()[0]  # not a record
        cli.seen.clear()
        for fmt in ("text", "json", "markdown"):
            shown = cli("rollback", version, "--dir", str(root), "--env", "dev", "--format", fmt, code=1)
            assert "pass --auto-approve" in shown and "orders" in shown
        cli("rollback", version, "--dir", str(root), "--env", "dev", "--auto-approve")
        assert_clean(cli.seen, old, new)


@few
@given(dev=secret, prod=secret, where=st.sampled_from(["process", "vars"]))
def test_diff_shows_neither_environments_value(dev: str, prod: str, where: str) -> None:
    # Finding 4: diff printed the other environment's value (6 times in JSON). Each job sets
    # its own CESYNC_VAR_TOKEN: the diff job knows only one of the two values.
    if dev == prod:
        prod += "2"
    with tempfile.TemporaryDirectory() as tmp:
        in_vars = where == "vars"
        files = {"toolsets/orders.yaml": TOOL, "tools/note.yaml": GLUED}
        root = repo_with(Path(tmp), dev if in_vars else "unused-dev", prod if in_vars else "unused-prod", files)
        cli = Cli()
        job = {"dev": {} if in_vars else {"CESYNC_VAR_TOKEN": dev}, "prod": {} if in_vars else {"CESYNC_VAR_TOKEN": prod}}
        cli("apply", "--dir", str(root), "--env", "dev", "--auto-approve", env=job["dev"])
        (root / "tools" / "greet.yaml").unlink()  # one real difference besides the secret
        cli("apply", "--dir", str(root), "--env", "prod", "--auto-approve", env=job["prod"])
        cli.seen.clear()
        d = ("--dir", str(root), "--from", "dev", "--to", "prod")
        for fmt in ("text", "json", "markdown"):
            cli("diff", *d, "--format", fmt, env=job["prod"])
        assert_clean(cli.seen, dev, prod)
        promoted = json.loads(cli("diff", *d, "--format", "json", env=job["prod"]))
        changed = {c["name"].rsplit("/", 1)[-1] for c in promoted["changes"]}
        assert "greet" in changed
        if in_vars:
            assert "orders" not in changed  # each renders its own value: no change


@few
@given(token=secret)
def test_exec_and_test_reports_hide_the_value(token: str) -> None:
    # Finding 5: exec and test printed what the tool returned (text, JSON, JUnit).
    token += "x"  # it goes into Python code as r'''${TOKEN}''': no backslash before the quotes
    with tempfile.TemporaryDirectory() as tmp:
        root = repo_with(Path(tmp), token, "unused-prod", {"tools/echo.yaml": ECHO, "tests/echo.yaml": TESTS})
        cli = Cli()
        _apply(cli, root, "dev")
        cli.seen.clear()
        d = ("--dir", str(root), "--env", "dev")
        shown = cli("exec", "echo", *d, "--args", '{"x": 1}')
        assert MASK in shown
        cli("exec", "echo", *d, "--args", '{"x": 1}', "--raw")
        junit = Path(tmp) / "junit.xml"
        for fmt in ("text", "json"):
            cli("test", *d, "--format", fmt, "--junit", str(junit), code=1)
            cli.seen.append(junit.read_text(encoding="utf-8"))
        assert_clean(cli.seen, token)
        assert html.escape(token) not in "".join(cli.seen)


DOC_TOOL = """openApiToolset:
  url: https://docs.example/v1
  openApiSchema: |
    openapi: 3.0.0
    info:
      title: docs
      version: "1"
      description: |-
        see k${TOKEN}k
    servers: [{url: $env_var}]
    paths:
      /d: {get: {operationId: get_d, responses: {"200": {description: ok}}}}
"""


@few
@given(token=secret)
def test_export_and_pull_write_the_variable_where_the_value_is_glued(token: str) -> None:
    # Finding 6: a value glued to other text (key${TOKEN}) was written as a literal.
    with tempfile.TemporaryDirectory() as tmp:
        root = repo_with(Path(tmp), token, "unused-prod", {"tools/note.yaml": GLUED, "toolsets/docs.yaml": DOC_TOOL})
        cli = Cli()
        _apply(cli, root, "dev")
        out = Path(tmp) / "exported"
        cli("export", "--dir", str(root), "--env", "dev", "--out", str(out))
        files = {
            p.relative_to(out).as_posix(): p.read_text(encoding="utf-8")
            for p in out.rglob("*")
            if p.is_file() and ".cesync" not in p.parts and p.name != "cesync.yaml"
        }
        assert "key${TOKEN}glued and ${TOKEN}" in files["tools/note.yaml"]
        assert "k${TOKEN}k" in files["toolsets/docs.yaml"]  # the document stays in the YAML file, templated
        cli("plan", "--dir", str(out), "--env", "dev", "--detailed-exitcode")  # and renders back exactly
        # pull: the tool files go, the app still has them: new files, written as export writes them
        for rel in ("tools/note.yaml", "toolsets/docs.yaml"):
            (root / rel).unlink()
        cli("pull", "--dir", str(root), "--env", "dev", "--dry-run")
        cli("pull", "--dir", str(root), "--env", "dev")
        pulled = (root / "tools" / "note.yaml").read_text(encoding="utf-8")
        assert "key${TOKEN}glued and ${TOKEN}" in pulled
        # an edit of an existing file whose field is a literal: the app's text holds the secret
        (root / "tools" / "note.yaml").write_text(GLUED.replace("key${TOKEN}glued and ${TOKEN}", "plain"), encoding="utf-8")
        cli("pull", "--dir", str(root), "--env", "dev")
        assert "key${TOKEN}glued and ${TOKEN}" in (root / "tools" / "note.yaml").read_text(encoding="utf-8")
        written = [*files.values(), *(p.read_text(encoding="utf-8") for p in (root / "tools").rglob("*.yaml"))]
        assert_clean([*cli.seen, *written], token)


def test_export_refuses_a_value_it_cannot_template(tmp_path: Path) -> None:
    token = "s3cr3t-value"
    root = repo_with(
        tmp_path, token, "unused-prod", {"tools/note.yaml": 'clientFunction:\n  name: n\n  description: "cost $s3cr3t-value"\n'}
    )
    cli = Cli()
    _apply(cli, root, "dev")
    out = tmp_path / "exported"
    shown = cli("export", "--dir", str(root), "--env", "dev", "--out", str(out), code=1)
    assert "sensitive variable TOKEN" in shown and "nothing was written" in shown
    assert not out.exists() or not any(out.rglob("*.yaml"))
    assert_clean(cli.seen, token)


def test_pull_refuses_a_value_in_an_included_file(tmp_path: Path) -> None:
    token = "s3cr3t-value"
    schema = 'openapi: 3.0.0\ninfo: {title: docs, version: "1"}\nservers: [{url: $env_var}]\npaths:\n  /d: {get: {operationId: get_d, responses: {"200": {description: ok}}}}\n'
    tool = "openApiToolset:\n  url: https://docs.example/v1\n  openApiSchema: {file: ../schemas/docs.yaml}\n"
    root = repo_with(tmp_path, token, "unused-prod", {"toolsets/docs.yaml": tool, "schemas/docs.yaml": schema})
    cli = Cli()
    _apply(cli, root, "dev")
    (root / "schemas" / "docs.yaml").write_text(schema.replace('version: "1"', f'version: "1", description: "k{token}"'))
    _apply(cli, root, "dev")  # the app now holds the value in the document
    (root / "schemas" / "docs.yaml").write_text(schema)
    cli.seen.clear()
    shown = cli("pull", "--dir", str(root), "--env", "dev", code=1)
    assert "schemas/docs.yaml" in shown and "sensitive variable TOKEN" in shown
    assert (root / "schemas" / "docs.yaml").read_text() == schema  # nothing was written
    assert_clean(cli.seen, token)


# --- the command modules write only through the one output path -------------------------------


def test_commands_print_only_through_the_output_path() -> None:
    import ast

    import cesync.cli as cli_package

    folder = Path(cli_package.__file__).parent
    offenders: list[str] = []
    for path in sorted(folder.glob("*.py")):
        if path.name == "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                f = node.func
                name = ast.unparse(f)
                if name in ("click.echo", "click.secho", "print", "sys.stdout.write", "sys.stderr.write"):
                    offenders.append(f"{path.name}:{node.lineno}: {name}")
    assert offenders == [], "write through cli.out/err/save (scrubbed): " + ", ".join(offenders)
