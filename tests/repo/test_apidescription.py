"""A field CES has never blocks a user (issue 33 item 2): with a newer discovery document (named in
cesync.yaml, cached, or fetched live over loopback here, never from Google) the repo validates,
plans, applies against the emulator, which reads the same description, and plans empty; without
one each unknown field is one problem saying which revision cesync knows and how to give it a
newer one; a field the newest document dropped is refused saying so."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cesync.api import descriptors
from cesync.client.apidocs import fetch_discovery
from cesync.emulator.server import BackgroundServer
from cesync.errors import CesyncError
from cesync.repo import apidescription
from cesync.repo.repo import load_repo
from tests.api_newer import REVISION, newer
from tests.helpers import cesync, make_repo

CONFIG = "version: 1\n{api}environments:\n  local: {{project: p, location: us, app: a, endpoint: emulator}}\n"
NAMED = "api:\n  discovery: {v1: api/ces.v1.json}\n"
APP = "displayName: A\nmodelSettings: {model: gemini-2.5-flash, reasoningBudget: 512, thinkingLevel: MAXIMAL}\n"
GUARDRAIL = (
    "displayName: g\ncontentFilter: {bannedContents: [x], matchType: SENSITIVE_WORDS}\nescalation: {target: q1, priority: HIGH}\n"
)


@pytest.fixture(autouse=True)
def bundled() -> Iterator[None]:
    """Each test starts and ends with the description cesync ships (the state is the process's)."""
    descriptors.use_documents({})
    yield
    descriptors.use_documents({})


def repo(tmp_path: Path, api: str = NAMED, document: dict[str, Any] | None = None, **files: str) -> Path:
    written = {"cesync.yaml": CONFIG.format(api=api), "app.yaml": APP, "guardrails/g.yaml": GUARDRAIL, **files}
    if document is not None:
        written["api/ces.v1.json"] = json.dumps(document)
    root = make_repo(tmp_path, written)
    (root / "tools" / "greet.yaml").unlink()
    return root


def run(root: Path, *args: str, url: str = "") -> tuple[int, str]:
    where = ["--env", "local", "--endpoint", url] if url else []
    r = cesync(*args, "--dir", str(root), *where)
    return r.returncode, r.stdout + r.stderr


def test_with_a_newer_document_the_repo_validates_applies_and_plans_empty(tmp_path: Path) -> None:
    root = repo(tmp_path, document=newer())
    assert run(root, "validate") == (0, "ok: 2 files valid for local\n")
    with BackgroundServer(auto_create_apps=False, operation_delay=0.05) as server:
        code, said = run(root, "plan", url=server.url)
        assert code == 0 and "reasoningBudget: 512" in said and "thinkingLevel: MAXIMAL" in said and "priority: HIGH" in said
        code, said = run(root, "apply", "--auto-approve", url=server.url)
        assert code == 0 and "2 created" in said, said
        code, said = run(root, "plan", "--format", "json", url=server.url)
        assert code == 0 and json.loads(said[said.index("{") :])["changes"] == [], said
        # The emulator kept and serves what it was sent: a changed value of a newer field is a change.
        (root / "app.yaml").write_text(APP.replace("512", "1024"))
        code, said = run(root, "plan", url=server.url)
        assert code == 0 and "reasoningBudget: 512 -> 1024" in said, said


def test_offline_each_unknown_field_is_one_problem_that_says_what_to_do(tmp_path: Path) -> None:
    root = repo(tmp_path, api="")
    code, said = run(root, "validate")
    assert code == 1
    lines = [line for line in said.splitlines() if ": " in line and line.split(":")[0] in ("app.yaml", "guardrails/g.yaml")]
    assert len(lines) == 3, said
    for field in ("unknown field 'reasoningBudget' in ModelSettings", "unknown field 'escalation' in Guardrail", "'MAXIMAL'"):
        line = next(line for line in lines if field in line)
        assert "CES API revision 20261016" in line and "cesync.yaml (api: {discovery: {v1: FILE}})" in line, line
    assert "Traceback" not in said


def test_a_field_the_newest_document_dropped_is_refused_with_that_reason(tmp_path: Path) -> None:
    app = "displayName: A\nmodelSettings: {model: m, temperature: 0.5}\n"
    root = repo(tmp_path, document=newer(drop_temperature=True), **{"app.yaml": app})
    code, said = run(root, "validate")
    assert code == 1
    assert (
        f"'temperature' is no longer a field of ModelSettings: Google's discovery document for CES (revision {REVISION})" in said
    )


def test_an_output_only_field_of_the_newer_document_is_refused(tmp_path: Path) -> None:
    tool = "clientFunction: {name: f}\nlastRunTime: '2026-01-01T00:00:00Z'\n"
    root = repo(tmp_path, document=newer(), **{"tools/t.yaml": tool})
    code, said = run(root, "validate")
    assert code == 1 and "'lastRunTime' is output only" in said, said


def test_an_output_only_field_inside_a_message_of_the_newer_document_is_refused(tmp_path: Path) -> None:
    """Before, validate took escalation.ticket, plan sent it, the server dropped it and no plan was empty."""
    guardrail = GUARDRAIL.replace("priority: HIGH}", "priority: HIGH, ticket: T-1}")
    root = repo(tmp_path, document=newer(), **{"guardrails/g.yaml": guardrail})
    code, said = run(root, "validate")
    assert code == 1 and "guardrails/g.yaml:3:" in said and "'ticket' is output only" in said, said


def test_a_wrong_value_of_a_newer_field_is_refused_with_the_revision(tmp_path: Path) -> None:
    app = "displayName: A\nmodelSettings: {reasoningBudget: lots}\n"
    root = repo(tmp_path, document=newer(), **{"app.yaml": app})
    code, said = run(root, "validate")
    assert code == 1 and "reasoningBudget:" in said and f"revision {REVISION}" in said, said


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({"name": "other", "version": "v1", "revision": "1", "schemas": {}}, "not Google's discovery document for CES v1"),
        ("[1, 2", "is not JSON"),
        ({**newer(), "revision": "20200101"}, "older than the one cesync ships (20261016)"),
        ({**newer(), "revision": "\u00b2"}, "has no revision"),  # a digit to str.isdigit, not to int()
        ({**newer(), "revision": "9" * 5000}, "has no revision"),  # past int()'s 4300 digits
    ],
    ids=["not-ces", "not-json", "older", "superscript-revision", "huge-revision"],
)
def test_a_named_document_that_is_no_newer_description_is_a_problem_of_cesync_yaml(
    tmp_path: Path, document: Any, expected: str
) -> None:
    root = repo(tmp_path, **{"api/ces.v1.json": document if isinstance(document, str) else json.dumps(document)})
    code, said = run(root, "validate")
    assert code == 1 and "cesync.yaml:3:" in said and expected in said, said


# --- the live document, over loopback ----------------------------------------------------------


@pytest.fixture
def served() -> Iterator[tuple[str, list[str]]]:
    """A discovery endpoint on loopback answering the newer document, and the paths it was asked."""
    asked: list[str] = []
    body = json.dumps(newer()).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            if "version=v1beta" in self.path:
                self.send_response(404)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/$discovery/rest", asked
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def signing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CESYNC_CACHE_KEY", "test-key-of-this-machine")


def loopback_fetch(base: str) -> apidescription.Fetch:
    def fetch(version: str) -> dict[str, Any]:
        return fetch_discovery(version, url=f"{base}?version={version}", allowed=lambda url: url.startswith(base))

    return fetch


def test_an_unknown_field_fetches_the_live_document_once_and_caches_it_by_revision(
    tmp_path: Path, served: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch, signing_key: None
) -> None:
    base, asked = served
    monkeypatch.delenv(apidescription.OFFLINE_VAR)
    monkeypatch.setattr(apidescription, "_live", loopback_fetch(base))
    root = repo(tmp_path, api="")
    assert load_repo(root).validate() == []
    assert descriptors.revision() == REVISION
    assert sorted(p.name for p in (root / apidescription.CACHE_FOLDER).iterdir()) == [
        f"ces.v1.{REVISION}.json",
        f"ces.v1.{REVISION}.json.sig",
    ]
    assert len(asked) == 2  # v1, and v1beta (which this server does not have)
    descriptors.use_documents({})
    assert load_repo(root).validate() == []  # from the cache: nothing asked again
    assert len(asked) == 2


def test_a_repo_that_needs_nothing_newer_fetches_nothing(
    tmp_path: Path, served: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    base, asked = served
    monkeypatch.delenv(apidescription.OFFLINE_VAR)
    monkeypatch.setattr(apidescription, "_live", loopback_fetch(base))
    typo = "displayName: A\nmodelSettings: {modle: m}\n"  # a typo of a field cesync knows is no newer field
    root = repo(
        tmp_path, api="", **{"app.yaml": typo, "guardrails/g.yaml": "displayName: g\ncontentFilter: {bannedContents: [x]}\n"}
    )
    problems = [str(p) for p in load_repo(root).validate()]
    assert asked == [] and any("did you mean 'model'?" in p for p in problems), problems


def test_fetch_false_keeps_cesync_offline(tmp_path: Path, served: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    base, asked = served
    monkeypatch.delenv(apidescription.OFFLINE_VAR)
    monkeypatch.setattr(apidescription, "_live", loopback_fetch(base))
    root = repo(tmp_path, api="api:\n  fetch: false\n")
    assert len(load_repo(root).validate()) == 3 and asked == []


def test_a_fetch_that_failed_says_why_in_each_unknown_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Online but refused (a 403, a proxy the fetch does not use): the problem said only "run where
    cesync can fetch it", which the user believed they did."""
    monkeypatch.delenv(apidescription.OFFLINE_VAR)

    def refused(version: str) -> dict[str, Any]:
        raise CesyncError(f"https://ces.googleapis.com/$discovery/rest?version={version} answered HTTP 403")

    monkeypatch.setattr(apidescription, "_live", refused)
    root = repo(tmp_path, api="")
    problems = [str(p) for p in load_repo(root).validate()]
    assert len(problems) == 3, problems
    assert all(
        "fetching it failed: https://ces.googleapis.com/$discovery/rest?version=v1 answered HTTP 403" in p for p in problems
    )
    descriptors.use_documents({})
    monkeypatch.setenv(apidescription.OFFLINE_VAR, "1")
    assert not any("fetching it failed" in str(p) for p in load_repo(root).validate())  # nothing tried: nothing said


@pytest.mark.parametrize(
    "url",
    ["http://ces.googleapis.com/$discovery/rest?version=v1", "https://ces.googleapis.com.evil.example/x", "https://127.0.0.1/x"],
)
def test_only_googles_hosts_are_asked(url: str) -> None:
    with pytest.raises(CesyncError, match="cesync asks only Google's hosts"):
        fetch_discovery("v1", url=url, credentials=object())


def test_an_answer_that_is_not_the_document_is_refused(served: tuple[str, list[str]]) -> None:
    base, _ = served
    with pytest.raises(CesyncError, match="HTTP 404"):
        fetch_discovery("v1beta", url=f"{base}?version=v1beta", allowed=lambda url: True)
    with pytest.raises(CesyncError, match="did not answer CES's discovery document for v1beta"):
        fetch_discovery("v1beta", url=f"{base}?version=v1", allowed=lambda url: True)


# --- generated: any field a newer document adds, of any type, is written, validated and rendered ----

NEWER_VALUES = st.sampled_from(
    [
        ({"type": "string"}, "text"),
        ({"type": "boolean"}, True),
        ({"type": "integer", "format": "int32"}, 7),
        ({"type": "number", "format": "double"}, 1.5),
        ({"type": "string", "format": "int64"}, "12"),
        ({"type": "string", "format": "google-duration"}, "3s"),
        ({"type": "string", "enum": ["X_UNSPECIFIED", "ONE", "TWO"]}, "TWO"),
        ({"type": "object", "additionalProperties": {"type": "string"}}, {"k": "v"}),
        ({"type": "array", "items": {"type": "string"}}, ["a", "b"]),
        ({"$ref": "Fresh"}, {"inner": "x"}),
    ]
)


@settings(max_examples=15, deadline=None)
@given(st.from_regex(r"zz[a-z]{1,8}[A-Z][a-z]{1,5}", fullmatch=True), NEWER_VALUES)
def test_any_newer_field_is_validated_and_rendered_as_written(name: str, typed: tuple[dict[str, Any], Any]) -> None:
    prop, value = typed
    document = newer()
    document["schemas"]["ModelSettings"]["properties"][name] = {**prop, "description": "Optional. New."}
    document["schemas"]["Fresh"] = {"id": "Fresh", "type": "object", "properties": {"inner": {"type": "string"}}}
    app = {"displayName": "A", "modelSettings": {"model": "m", name: value}}
    with tempfile.TemporaryDirectory() as scratch:
        root = repo(Path(scratch), document=document, **{"app.yaml": json.dumps(app), "guardrails/g.yaml": "displayName: g\n"})
        try:
            loaded = load_repo(root)
            assert loaded.validate() == []
            rendered = {r.kind.name: r.body for r in loaded.render(loaded.env("local"))}
            assert rendered["app"]["modelSettings"][name] == value
            assert rendered["app"]["modelSettings"]["model"] == "m"
        finally:
            descriptors.use_documents({})


# --- what a repo in a pull request can put in the way ------------------------------------------


def test_a_cache_entry_the_repo_carries_is_not_used(tmp_path: Path, signing_key: None) -> None:
    """.cesync/ is in the repo: a pull request can commit a "cache" that cesync never fetched.
    It is passed over (not signed with this machine's key) and each unknown field says so."""
    root = repo(tmp_path, api="")
    folder = root / apidescription.CACHE_FOLDER
    folder.mkdir(parents=True)
    (folder / f"ces.v1.{REVISION}.json").write_text(json.dumps(newer()))
    assert apidescription.cached_documents(root) == {}
    code, said = run(root, "validate")
    assert code == 1 and "unknown field 'reasoningBudget'" in said, said


def test_what_cesync_fetched_is_used_again_and_a_changed_entry_is_not(
    tmp_path: Path, served: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch, signing_key: None
) -> None:
    base, _ = served
    monkeypatch.delenv(apidescription.OFFLINE_VAR)
    monkeypatch.setattr(apidescription, "_live", loopback_fetch(base))
    root = repo(tmp_path, api="")
    assert load_repo(root).validate() == []
    assert list(apidescription.cached_documents(root)) == [REVISION]
    entry = root / apidescription.CACHE_FOLDER / f"ces.v1.{REVISION}.json"
    entry.write_text(entry.read_text().replace("Tokens the model may think with", "Changed"))
    assert apidescription.cached_documents(root) == {}


def _unblocked(fifo: Path) -> None:
    """Let a reader stuck opening or reading ``fifo`` go (end of file)."""
    with contextlib.suppress(OSError):
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


def _returns(call: Any, fifo: Path) -> bool:
    done = threading.Event()
    thread = threading.Thread(target=lambda: (call(), done.set()), daemon=True)
    thread.start()
    finished = done.wait(5)
    _unblocked(fifo)
    thread.join(5)
    return finished


def test_a_cache_entry_that_is_a_fifo_or_a_symlink_is_passed_over(tmp_path: Path, signing_key: None) -> None:
    root = repo(tmp_path, api="")
    folder = root / apidescription.CACHE_FOLDER
    folder.mkdir(parents=True)
    fifo = folder / f"ces.v1.{REVISION}.json"
    os.mkfifo(fifo)
    assert _returns(lambda: apidescription.cached_documents(root), fifo)
    fifo.unlink()
    (folder / f"ces.v1beta.{REVISION}.json").symlink_to("/dev/zero")
    assert apidescription.cached_documents(root) == {}


@pytest.mark.parametrize("where", ["outside", "symlink", "absolute", "fifo"])
def test_a_named_document_must_be_a_file_inside_the_repo(tmp_path: Path, where: str) -> None:
    (tmp_path / "r").mkdir()
    outside = tmp_path / "r" / "elsewhere.json"  # beside the repo (tmp_path/r/repo)
    outside.write_text(json.dumps(newer()))
    name = {"outside": "../elsewhere.json", "absolute": str(outside)}.get(where, "api/ces.v1.json")
    root = repo(tmp_path / "r", api=f"api:\n  discovery: {{v1: '{name}'}}\n")
    (root / "api").mkdir()
    if where == "symlink":
        (root / "api" / "ces.v1.json").symlink_to(outside)
    if where == "fifo":
        os.mkfifo(root / "api" / "ces.v1.json")
    result: list[tuple[int, str]] = []
    assert _returns(lambda: result.append(run(root, "validate")), root / "api" / "ces.v1.json")
    code, said = result[0]
    expected = {"fifo": "is not a regular file", "symlink": "resolves outside the repo"}.get(where, "inside the repo")
    assert code == 1 and "cesync.yaml:3:" in said and expected in said, said


def test_the_cache_is_never_written_outside_the_repo(
    tmp_path: Path, served: tuple[str, list[str]], monkeypatch: pytest.MonkeyPatch, signing_key: None
) -> None:
    """A committed .cesync symlink, or a planted ces.v1.<revision>.tmp symlink, would have had
    the fetched document written through it, over any file the job can write."""
    base, _ = served
    monkeypatch.delenv(apidescription.OFFLINE_VAR)
    monkeypatch.setattr(apidescription, "_live", loopback_fetch(base))
    victim = tmp_path / "victim"
    victim.write_text("precious")
    root = repo(tmp_path / "r", api="")
    folder = root / apidescription.CACHE_FOLDER
    folder.mkdir(parents=True)
    for name in (f"ces.v1.{REVISION}.tmp", f"ces.v1.{REVISION}.json.tmp", f"ces.v1.{REVISION}.json"):
        (folder / name).symlink_to(victim)
    assert load_repo(root).validate() == []  # used for this run all the same
    assert victim.read_text() == "precious"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root2 = repo(tmp_path / "r2", api="")
    (root2 / ".cesync").symlink_to(elsewhere)
    descriptors.use_documents({})
    assert load_repo(root2).validate() == []
    assert list(elsewhere.iterdir()) == []
