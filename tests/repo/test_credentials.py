"""validate's lint for secrets where they do not belong: literal credentials warn, MCP customHeaders err."""

from __future__ import annotations

import itertools
import math
import re
import string
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cesync.api.kinds import KINDS
from cesync.core.yamlfile import Path_, load_text
from cesync.core.yamlout import to_yaml
from cesync.errors import Problem
from cesync.models import Behavior, Kind, ProtoModel, specs
from cesync.repo import credentials
from cesync.repo.credentials import CONTEXT_ONLY, lint_credentials, scan_text
from cesync.repo.credentials import HOME as HOME_ADVICE
from cesync.repo.repo import load_repo
from tests.helpers import cesync, make_repo

HOME = "Secret Manager"

# A generated secret: long, mixed, random (what a key or token really looks like): well over
# the 3.3 bits a character the lint asks for. 000000000000123456789ABC is no generated secret.
token = st.text(string.ascii_letters + string.digits, min_size=24, max_size=48).filter(
    lambda t: any(c.isdigit() for c in t) and any(c.isalpha() for c in t) and _bits(t) >= 3.8
)


def _bits(text: str) -> float:
    """Shannon entropy of a text, in bits a character."""
    return -sum(n / len(text) * math.log2(n / len(text)) for n in Counter(text).values())


SHAPES = [
    ("Authorization: Bearer {t}", "a bearer token"),
    ("https://api.example/v1?api_key={t}&x=1", "a literal key/token value"),
    ("token={t}", "a literal key/token value"),
    ("client_secret: '{t}'", "a literal key/token value"),
    ('"password": "{t}"', "a literal key/token value"),
]


@settings(max_examples=80, deadline=None)
@given(t=token, shape=st.sampled_from(SHAPES), pad=st.text(" abc", max_size=10), line=st.integers(0, 3))
def test_literal_credentials_are_found_at_their_position(t: str, shape: tuple[str, str], pad: str, line: int) -> None:
    template, what = shape
    text = "\n" * line + pad + template.format(t=t) + "\n"
    found = scan_text(text, "tools/x.yaml")
    assert [p.message.split(" in plain text")[0] for p in found] == [f"warning: {what}"]
    problem = found[0]
    assert (problem.file, problem.line) == ("tools/x.yaml", line + 1)
    assert t in text.splitlines()[line][problem.col - 1 :]
    assert HOME in problem.message and "sensitive" in problem.message


@pytest.mark.parametrize(
    "text",
    [
        "Authorization: Bearer $context.variables.token",
        "url: https://orders.example/v1?key=${API_KEY}",
        "token: ${TOKEN_FROM_CI_SECRET_STORE}",
        "apiKeySecretVersion: projects/p/secrets/orders-key/versions/latest",
        "description: the keyboard shortcut for tokenization is documented here",
        "key: aaaaaaaaaaaaaaaaaaaaaaaaaaaa",  # long, but not random
        "key: ORDER_NUMBER_PLACEHOLDER_VALUE",
    ],
)
def test_references_and_ordinary_text_are_not_flagged(text: str) -> None:
    assert scan_text(text, "f") == []


@pytest.mark.parametrize(
    "text, what",
    [
        ("-----BEGIN PRIVATE KEY-----\nMIIE...\n", "a private key"),
        ("key: |\n  -----BEGIN RSA PRIVATE KEY-----\n", "a private key"),
        ("x: AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW", "a Google API key"),
        ("x: ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5", "a GitHub token"),
        ("x: AKIAIOSFODNN7EXAMPLE", "an AWS access key id"),
    ],
)
def test_known_credential_shapes(text: str, what: str) -> None:
    found = scan_text(text, "f")
    assert len(found) == 1 and found[0].message.startswith(f"warning: {what}")


LEAKY_TOOL = """clientFunction:
  name: leaky
  description: |
    Call it with
    Authorization: Bearer Zx9Qw3Er7Ty1Ui5Op2As6Df8Gh4
"""


def test_validate_warns_and_strict_fails(tmp_path: Path) -> None:
    root = make_repo(tmp_path, {"tools/leaky.yaml": LEAKY_TOOL})
    result = cesync("validate", "--dir", str(root))
    assert result.returncode == 0, result.stderr
    assert "tools/leaky.yaml:5:27: warning: a bearer token in plain text" in result.stderr
    assert "1 warning (--strict makes them fail)" in result.stderr
    strict = cesync("validate", "--dir", str(root), "--strict")
    assert strict.returncode == 1 and "tools/leaky.yaml:5:27: warning: a bearer token" in strict.stderr


def test_included_files_and_sensitive_values_in_cesync_yaml(tmp_path: Path) -> None:
    config = (
        "version: 1\ndefaults:\n  sensitive: [API_KEY]\n  vars:\n    API_KEY: not-here\nenvironments:\n"
        "  local: {endpoint: embedded, project: p, location: us, app: a}\n"
    )
    code = 'def call() -> dict:\n    return {"token": "Yh7Jk2Lm9Np4Qr8St3Uv6Wx1Za5"}\n'
    tool = "pythonFunction:\n  name: call\n  pythonCode: {file: ../code/call.py}\n"
    root = make_repo(tmp_path, {"cesync.yaml": config, "code/call.py": code, "tools/call.yaml": tool})
    result = cesync("validate", "--dir", str(root))
    assert result.returncode == 0, result.stderr
    assert "code/call.py:2:23: warning: a literal key/token value" in result.stderr
    assert "cesync.yaml:5:14: warning: sensitive variable 'API_KEY' has its value in cesync.yaml" in result.stderr


MCP = """mcpToolset:
  serverAddress: https://mcp.example/x
  customHeaders:
    X-Session: $context.variables.session_id
    X-Api-Key: {value}
"""


@pytest.mark.parametrize("value", ["sk-literal-1234", "${MCP_KEY}", "$context.variables.", "Bearer $context.variables.t"])
def test_mcp_custom_headers_must_be_context_variables(tmp_path: Path, value: str) -> None:
    root = make_repo(tmp_path, {"toolsets/mcp.yaml": MCP.format(value=value)})
    result = cesync("validate", "--dir", str(root), env={"CESYNC_VAR_MCP_KEY": "from-the-environment"})
    assert result.returncode == 1
    assert "toolsets/mcp.yaml:5:16: customHeaders.X-Api-Key must be $context.variables.<name>" in result.stderr
    assert "apiKeySecretVersion" in result.stderr and "from-the-environment" not in result.stderr


# Pieces of every rule (and letters that match others under IGNORECASE: the Kelvin sign, the long s).
PIECES = st.sampled_from(
    [
        "Bearer ", "AIza", "ghp_", "github_pat_", "AKIA", "ASIA", "xoxb-", "-----BEGIN RSA PRIVATE KEY-----",
        "api_key", "KEY", "\u212aey", "\u017fecret", "Token", "passwd", "pwd", "Credentials", ": ", "=", "'", "\n", " ", "\r", "\x85", "\u2028",
    ]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.one_of(PIECES, token, st.text(max_size=4)), max_size=12))
@example(parts=["API_KEY", ": ", "Zx9Qw8Er7Ty6Ui5Op4As3Df2"])
@example(parts=["\u212aey", "=", "Zx9Qw8Er7Ty6Ui5Op4As3Df2"])
@example(parts=["\u017fecret", "'", ": ", "Zx9Qw8Er7Ty6Ui5Op4As3Df2"])
@example(parts=["x\r", "API_KEY", ": ", "Zx9Qw8Er7Ty6Ui5Op4As3Df2", "\u2028", "token=", "Zx9Qw8Er7Ty6Ui5Op4As3Df3"])
@example(parts=["a\x85\x0b", "Bearer ", "Zx9Qw8Er7Ty6Ui5Op4As3Df2", "\r\n", "AIza", "x" * 35])
def test_rules_skipped_by_their_needle_would_not_have_matched(parts: list[str]) -> None:
    """The needles (per file, then per line: scan_text searches a rule only on the lines that
    hold one) only save time: the warnings are those of every rule on every line, whatever
    the line breaks (splitlines also breaks at \r, \x85, \u2028 ...)."""
    text = "".join(parts)
    fast = scan_text(text, "f.yaml")
    with pytest.MonkeyPatch.context() as m:
        m.setattr(credentials, "RULES", tuple(replace(rule, needle=None) for rule in credentials.RULES))
        assert fast == scan_text(text, "f.yaml")


LITERAL = "Bearer Zx9Qw3Er7Ty1Ui5Op2As6Df8Gh4"
CONTEXT_FORMAT = re.compile(r"must be in the format ``\$context\.variables\.<name_of_variable>``", re.IGNORECASE)


def _text_fields(
    model: type[ProtoModel], prefix: Path_ = (), seen: frozenset[type[ProtoModel]] = frozenset()
) -> Iterator[tuple[Path_, bool]]:
    """(path, whether the API documents the field as $context.variables.<name> only) of every text field a file can set."""
    for name, spec in specs(model).items():
        if spec.behavior is Behavior.OUTPUT_ONLY:
            continue
        here: Path_ = (*prefix, name, *((0,) if spec.repeated else ("k",) if spec.map else ()))
        if spec.message is not None and spec.kind is Kind.MESSAGE:
            if spec.message not in seen:  # Schema holds Schemas
                yield from _text_fields(spec.message, here, seen | {model})
        elif spec.kind is Kind.STRING:
            yield here, bool(CONTEXT_FORMAT.search(model.model_fields[name].description or ""))


def _put(data: dict[str, Any], path: Path_, value: str) -> None:
    node: Any = data
    for part, after in itertools.pairwise(path):
        if isinstance(node, list):
            while len(node) <= int(part):
                node.append([] if isinstance(after, int) else {})
            node = node[int(part)]
        else:
            node = node.setdefault(part, [] if isinstance(after, int) else {})
    if isinstance(node, list):
        node.append(value)
    else:
        node[path[-1]] = value


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_advice_fits_every_field_the_lint_covers(tmp_path: Path, kind: str) -> None:
    """A token pasted into any text field of any kind is found once, and told where it may go
    instead: to a context variable where the API documents the field as taking only
    $context.variables.<name> (MCP customHeaders, BearerTokenConfig.token, ...), a Secret
    Manager version or a 'sensitive:' variable elsewhere (#28 item 10)."""
    model = KINDS[kind].model
    fields = dict(_text_fields(model))
    # An agent's remote A2A agent authenticates as a tool does (Agent.remoteA2aAgent.a2aConfig.apiAuthentication, rev 20261016).
    assert any(fields.values()) == (kind in ("tool", "toolset", "agent")), "the API's context-variable fields moved"
    body: dict[str, Any] = {}
    for path in fields:
        _put(body, path, LITERAL)
    rel = f"{KINDS[kind].folder or '.'}/{'app' if KINDS[kind].singleton else 'x'}.yaml"
    root = make_repo(tmp_path, {rel.removeprefix("./"): to_yaml(body)})
    found = [p for p in lint_credentials(load_repo(root)) if p.file == rel.removeprefix("./") and "a bearer token" in p.message]
    assert len(found) == len(fields), "\n".join(map(str, found))
    doc = load_text((root / rel).read_text(), rel)
    assert not isinstance(doc, Problem)
    by_line = {doc.positions.values[p][0]: p for p in fields}
    for problem in found:
        path = by_line[problem.line]
        told = problem.message.split(" in plain text; ")[1]
        if fields[path]:
            assert told == f"{'.'.join(map(str, path))} {CONTEXT_ONLY}", problem
        else:
            assert told == HOME_ADVICE and "sensitive:" in told, problem


def _includes_resolving_each(data: object, base: Path, root: Path) -> list[Path]:
    """credentials._includes spelt with a whole resolve per include: what resolving folders once must give."""
    if isinstance(data, dict):
        found: list[Path] = []
        for key, value in data.items():
            if key in credentials.INCLUDABLE and isinstance(value, dict) and isinstance(value.get("file"), str):
                target = (base / value["file"]).resolve()
                found += [target] if target.is_relative_to(root) and target.is_file() else []
            else:
                found += _includes_resolving_each(value, base, root)
        return found
    return [x for item in data for x in _includes_resolving_each(item, base, root)] if isinstance(data, list) else []


def test_included_files_are_found_as_resolving_each_finds_them(tmp_path: Path) -> None:
    """Symlinked files and folders, in and out of the repo, '..', missing files and folders: the
    walk from the resolved root names the same files, by the same resolved paths."""
    outside, root = tmp_path / "outside", tmp_path.resolve() / "repo"
    for folder in (outside, root / "tools", root / "schemas", root / "deep" / "er"):
        folder.mkdir(parents=True)
    for path in (outside / "s.yaml", root / "schemas" / "a.yaml", root / "deep" / "er" / "b.yaml"):
        path.write_text("openapi: 3.0.0\n")
    (root / "schemas" / "out.yaml").symlink_to(outside / "s.yaml")
    (root / "schemas" / "in.yaml").symlink_to(root / "deep" / "er" / "b.yaml")
    (root / "schemas" / "dangling.yaml").symlink_to(root / "nowhere.yaml")
    (root / "linked").symlink_to(outside)
    (root / "inner").symlink_to(root / "deep")
    rels = [
        "../schemas/a.yaml",
        "../schemas/out.yaml",
        "../schemas/in.yaml",
        "../schemas/dangling.yaml",
        "../linked/s.yaml",
        "../inner/er/b.yaml",
        "../inner/../schemas/a.yaml",
        "../schemas/missing.yaml",
        "../nofolder/x.yaml",
        "../schemas",
        "../schemas/.",
        "../schemas/..",
        "..",
        str(outside / "s.yaml"),
        str(root / "schemas" / "a.yaml"),
    ]
    data = [{"openApiSchema": {"file": rel}, "x": [{"pythonCode": {"file": rel}}]} for rel in rels]
    base = root / "tools"
    expected = _includes_resolving_each(data, base, root)
    assert credentials._includes(data, base, root) == expected
    assert len(expected) > 6  # most of the cases name a file inside the repo
