"""A large repo rendered in two processes gives what one process gives: the same resources in
the same order, the same problems, the same parse cache; a child that fails, is stopped or
loses its parent changes nothing and prints nothing."""

from __future__ import annotations

import itertools
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cesync.core import documents, parsecache
from cesync.errors import ConfigError
from cesync.repo import cache, parallel
from cesync.repo.cache import load_cache
from cesync.repo.loading import load_sources
from cesync.repo.repo import load_repo

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
from generate import generate

KEY = {"CESYNC_CACHE_KEY": "test-key-of-this-machine"}


@pytest.fixture(autouse=True)
def two_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two processes from a few files on, on any machine the tests run on."""
    monkeypatch.setattr(parallel, "THRESHOLD", 4)
    monkeypatch.setattr(parallel, "CHUNK", 3)
    monkeypatch.setattr(parallel, "cpus", lambda: 2)
    # the test process may hold threads of other tests (a server a fixture started): forking it
    # here is the tests' choice, not the product's
    monkeypatch.setattr(parallel, "other_threads", lambda: 0)
    monkeypatch.delenv("CESYNC_PARALLEL", raising=False)
    monkeypatch.setenv("CESYNC_CACHE", "off")


@pytest.fixture
def answers(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each render with a second process had its answer (False: the parent rendered its half)."""
    seen: list[bool] = []
    receive = parallel._receive

    def spy(receiver: Any, count: int, **options: Any) -> Any:
        got = receive(receiver, count, **options)
        seen.append(got is not None)
        return got

    monkeypatch.setattr(parallel, "_receive", spy)
    return seen


def outcome(root: Path) -> tuple[Any, list[Any]]:
    """What a render of dev gives (the resources, or the problems), and validate's problems."""
    repo = load_repo(root)
    try:
        got: Any = [(r.kind.name, r.id, r.body, r.source) for r in repo.render(repo.env("dev"))]
    except ConfigError as exc:
        got = exc.problems
    return got, load_repo(root).validate()


def both_ways(root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    two = outcome(root)
    monkeypatch.setenv("CESYNC_PARALLEL", "off")
    one = outcome(root)
    monkeypatch.delenv("CESYNC_PARALLEL")
    return two, one


def broken(root: Path) -> Path:
    """Problems of each kind a render finds, in files of both halves."""
    tools = sorted((root / "tools").glob("*.yaml"))
    tools[1].write_text(tools[1].read_text() + "descripton: misspelt\n")
    tools[2].write_text(tools[2].read_text() + "etag: abc\n")
    tools[5].write_text("pythonFunction: {name: f, pythonCode: 'def f(:'}\n")
    (root / "tools" / "bad-yaml.yaml").write_text("a: [\n")
    (root / "toolsets" / "bad-schema.yaml").write_text(
        "openApiToolset: {openApiSchema: 'openapi: 3.0.0\\npaths: [1, 2', url: 'https://x.example'}\n"
    )
    agent = sorted((root / "agents").glob("*.yaml"))[0]
    agent.write_text(agent.read_text().replace("tools:\n", "tools:\n  - no-such-tool\n", 1))
    return root


def test_a_repo_renders_the_same_in_two_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answers: list[bool]) -> None:
    root = generate(tmp_path / "repo", 40, agents=True)
    two, one = both_ways(root, monkeypatch)
    assert answers == [True] * 4  # the files parsed, then rendered; for render and for validate
    assert two == one
    assert isinstance(one[0], list) and len(one[0]) == 41 and one[1] == []


def test_a_repo_with_problems_reports_the_same_in_two_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answers: list[bool]
) -> None:
    root = broken(generate(tmp_path / "repo", 40, agents=True))
    two, one = both_ways(root, monkeypatch)
    assert answers == [True] * 4
    assert two == one
    assert len(one[1]) >= 5
    assert {p.file for p in one[1]} >= {"tools/bad-yaml.yaml", "toolsets/bad-schema.yaml"}


def _raise(sender: Any, answer: Any) -> None:
    raise RuntimeError("the child fails")


def _unpicklable(sender: Any, answer: Any) -> None:
    # more than a pickle frame (64 KiB) is in the pipe when the lambda fails: a part cut off half-way
    if isinstance(answer, list):
        answer = [*answer, *(f"{i:06d}" * 100 for i in range(300)), lambda: None]
    pickle.dump(answer, sender)


def _wrong(sender: Any, answer: Any) -> None:
    pickle.dump(("not", "the answer"), sender)


def _killed(sender: Any, answer: Any) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _terminated(sender: Any, answer: Any) -> None:
    os.kill(os.getpid(), signal.SIGINT)  # ignored: the parent decides
    os.kill(os.getpid(), signal.SIGTERM)


@pytest.mark.parametrize("failure", [_raise, _unpicklable, _wrong, _killed, _terminated])
def test_a_child_that_fails_leaves_its_half_to_the_parent(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    answers: list[bool],
    failure: Callable[[Any, Any], None],
) -> None:
    good = generate(tmp_path / "good", 30, agents=True)
    bad = broken(generate(tmp_path / "bad", 30, agents=True))
    expected = [both_ways(root, monkeypatch)[1] for root in (good, bad)]
    answers.clear()
    capfd.readouterr()
    monkeypatch.setattr(parallel, "_send", failure)
    assert [outcome(root) for root in (good, bad)] == expected
    assert answers == [False] * 8
    assert capfd.readouterr() == ("", "")  # the child says nothing, whatever happened to it


def test_the_child_prints_nothing(capfd: pytest.CaptureFixture[str], answers: list[bool]) -> None:
    def work(items: list[int]) -> list[int]:
        print("from", os.getpid())
        print("to stderr", file=sys.stderr)
        return [i * 2 for i in items]

    capfd.readouterr()
    assert parallel.run(list(range(10)), work) == [i * 2 for i in range(10)]
    out, err = capfd.readouterr()
    assert answers == [True]
    assert out.splitlines() == [f"from {os.getpid()}"] and err.splitlines() == ["to stderr"]  # the parent's half only


def test_started_is_called_once_after_the_fork(answers: list[bool]) -> None:
    calls: list[int] = []

    def work(items: list[int]) -> list[int]:
        return [len(calls) if multiprocessing.parent_process() is not None else -1 for _ in items]

    out = parallel.run(list(range(8)), work, started=lambda: calls.append(1))
    assert calls == [1] and answers == [True]
    assert out[1::2] == [0] * 4  # the child was forked before started() was called


def test_the_files_parsed_in_two_processes_are_those_one_parses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answers: list[bool]
) -> None:
    root = broken(generate(tmp_path / "repo", 30, agents=True))
    (root / "tools" / "round-trip.yaml").write_text("%YAML 1.2\n---\nclientFunction:\n  name: rt\n  description: x\n")
    loaded = []
    for way in ("on", "off"):
        monkeypatch.setenv("CESYNC_PARALLEL", way)
        problems: list[Any] = []
        files = load_sources(root, problems)
        docs = [f.doc for f in files]
        loaded.append(
            (
                [(f.kind, f.id, f.path, f.ignore) for f in files],
                [(d.file, d.data, d.text, d.digest, d.positions.keys, d.positions.values) for d in docs],
                problems,
            )
        )
    assert answers == [True]
    assert loaded[0] == loaded[1]
    assert loaded[0][2] and any(positions for *_, positions in loaded[0][1])


def test_no_second_process_to_be_had_leaves_all_to_one(monkeypatch: pytest.MonkeyPatch, answers: list[bool]) -> None:
    real = multiprocessing.get_context("fork")

    class NoFork:
        def Process(self, **kwargs: Any) -> Any:
            process = real.Process(**kwargs)

            def refused() -> None:
                raise OSError(11, "Resource temporarily unavailable")

            process.start = refused  # type: ignore[method-assign]
            return process

    monkeypatch.setattr(multiprocessing, "get_context", lambda method: NoFork())
    calls: list[int] = []
    assert parallel.run(list(range(10)), lambda xs: [x + 1 for x in xs], started=lambda: calls.append(1)) == list(range(1, 11))
    assert calls == [1] and answers == []


def test_small_repos_one_cpu_and_the_switch_use_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()
    monkeypatch.setattr(parallel, "other_threads", lambda: 0)
    assert not parallel.wanted(parallel.THRESHOLD - 1)
    monkeypatch.setattr(parallel, "cpus", lambda: 2)
    assert parallel.wanted(parallel.THRESHOLD) == ("fork" in multiprocessing.get_all_start_methods())
    monkeypatch.setenv("CESYNC_PARALLEL", "off")
    assert not parallel.wanted(10**6)
    monkeypatch.delenv("CESYNC_PARALLEL")
    monkeypatch.setattr(parallel, "cpus", lambda: 1)
    assert not parallel.wanted(10**6)


def test_the_parent_has_what_the_child_parsed(tmp_path: Path, answers: list[bool]) -> None:
    """The plan's diff parses each document again: those the child parsed are not parsed twice."""
    root = generate(tmp_path / "repo", 40, agents=True)
    marker = f"x-run: {tmp_path.name}\n"  # texts no earlier test parsed in this process
    for path in (root / "schemas").glob("*"):
        path.write_text(path.read_text() + marker)
    repo = load_repo(root)
    resources = repo.render(repo.env("dev"))
    assert answers == [True, True]
    schemas = [r.body["openApiToolset"]["openApiSchema"] for r in resources if "openApiToolset" in r.body]
    schemas = [s for s in schemas if marker in s]
    assert len(schemas) >= 4
    before = documents._parse_document.cache_info().misses
    for text in schemas:
        documents.parse_document(text)
    assert documents._parse_document.cache_info().misses == before


def test_the_parse_cache_holds_what_both_processes_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answers: list[bool]
) -> None:
    monkeypatch.setattr(cache, "MIN_ENTRIES", 0)
    monkeypatch.delenv("CESYNC_CACHE")
    for name, value in KEY.items():
        monkeypatch.setenv(name, value)
    kept = []
    for way in ("on", "off"):
        monkeypatch.setenv("CESYNC_PARALLEL", way)
        root = generate(tmp_path / way, 30, agents=True)
        assert load_repo(root).validate() == []
        repo = load_repo(root)
        repo.render(repo.env("dev"))
        stored = load_cache(root)
        assert stored is not None
        kept.append(stored.stored())
    assert answers == [True] * 4
    assert kept[0] == kept[1] and len(kept[0]) > 60
    parsecache.install(None)


def test_a_child_whose_parent_is_gone_ends(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    script = textwrap.dedent(
        f"""
        import multiprocessing, os, signal, sys, time
        from cesync.repo import parallel
        parallel.THRESHOLD, parallel.CHUNK, parallel.cpus = 2, 1, lambda: 2
        def work(items):
            if multiprocessing.parent_process() is not None:
                with open({str(pids)!r}, "a") as f:
                    f.write(f"{{os.getpid()}}\\n")
                time.sleep(0.2)
            else:
                time.sleep(0.5)
                os.kill(os.getpid(), signal.SIGKILL)
            return items
        parallel.run(list(range(400)), work)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGKILL and done.stdout == done.stderr == ""
    child = int(pids.read_text().split()[0])
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_no_fork_while_another_thread_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lock another thread holds at the fork stays held in the child: with the app read ahead
    in a thread, the files are handled in one process."""
    import threading

    monkeypatch.undo()  # the real count of threads
    monkeypatch.setattr(parallel, "cpus", lambda: 2)
    monkeypatch.delenv("CESYNC_PARALLEL", raising=False)
    forking = "fork" in multiprocessing.get_all_start_methods()
    before = parallel.other_threads()
    assert before == threading.active_count() - 1
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert parallel.other_threads() == before + 1
        assert not parallel.wanted(10**6)
    finally:
        stop.set()
        other.join()
    assert parallel.other_threads() == before
    monkeypatch.setattr(parallel, "other_threads", lambda: 0)
    assert parallel.wanted(10**6) == forking


def test_an_app_s_diffs_made_in_two_processes_are_those_one_makes(answers: list[bool]) -> None:
    """The plan's compare pass, handed parallel.run (as plan does): a forked child diffs every other
    pair, and sends back only the diffs that differ."""
    from cesync.core.passes.compare import compare
    from tests.core.passes.data import empty, given, remote_tool, tool

    desired = [tool(f"t{i}", "g" if i % 4 == 0 else "f") for i in range(20)]
    remote = [remote_tool(f"t{i}", **({"surprise": 1} if i % 5 == 0 else {})) for i in range(1, 22)]
    one, two = given(desired, remote), given(desired, remote, mapper=parallel.run)
    plan = compare(empty(two), two)
    assert answers == [True]
    assert plan == compare(empty(one), one)
    assert {c.action for c in plan.changes} == {"create", "update", "delete"} and plan.unknown_fields


def test_the_child_s_documents_come_once_the_parse_cache_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answers: list[bool]
) -> None:
    """A whole render takes the documents the child parsed after the cache file is written and let
    go of: the two are never held at once (the peak of the run that fills the cache)."""
    from cesync.repo import repo as repo_module

    monkeypatch.delenv("CESYNC_CACHE")
    monkeypatch.setenv("CESYNC_CACHE_KEY", KEY["CESYNC_CACHE_KEY"])
    monkeypatch.setattr(cache, "MIN_ENTRIES", 0)
    root = generate(tmp_path / "repo", 40, agents=True)
    for path in (root / "schemas").glob("*"):  # texts no earlier test parsed in this process
        path.write_text(path.read_text() + f"x-run: {tmp_path.name}\n")
    events: list[str] = []
    save, adopt = repo_module.save_cache, documents.adopt
    monkeypatch.setattr(repo_module, "save_cache", lambda *a, **k: (events.append("saved"), save(*a, **k))[1])
    monkeypatch.setattr(documents, "adopt", lambda parsed: (events.append(f"adopted {len(parsed.documents)}"), adopt(parsed))[1])
    repo = load_repo(root)
    events.clear()
    resources = repo.render(repo.env("dev"))
    assert answers == [True, True]
    assert events[0] == "saved" and events[1].startswith("adopted ") and events[1] != "adopted 0"
    assert multiprocessing.active_children() == []
    monkeypatch.setenv("CESYNC_PARALLEL", "off")
    one = load_repo(root)
    assert [(r.key, r.body) for r in resources] == [(r.key, r.body) for r in one.render(one.env("dev"))]


def test_documents_the_child_could_not_send_are_parsed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answers: list[bool]
) -> None:
    send = parallel._send

    def no_documents(sender: Any, answer: Any) -> None:
        if isinstance(answer, documents.Parsed):
            raise RuntimeError("lost on the way")  # in the child: its pipe closes with nothing more in it
        send(sender, answer)

    monkeypatch.setattr(parallel, "_send", no_documents)
    adopted: list[int] = []
    adopt = documents.adopt
    monkeypatch.setattr(documents, "adopt", lambda parsed: (adopted.append(len(parsed.documents)), adopt(parsed))[1])
    root = generate(tmp_path / "repo", 40, agents=True)
    two, one = both_ways(root, monkeypatch)
    # the parse's child answers in one go (lost: the parent parses all), the render's documents come later
    assert two == one and answers[:2] == [False, True]
    assert adopted == []
    assert multiprocessing.active_children() == []


@settings(max_examples=100, deadline=None)
@given(count=st.integers(0, 400), share=st.floats(0.05, 0.95))
def test_the_child_s_share_is_spread_evenly_and_every_item_placed_back(count: int, share: float) -> None:
    theirs = parallel._spread(count, share)
    assert theirs == sorted(set(theirs)) and all(0 <= i < count for i in theirs)
    assert abs(len(theirs) - count * share) < 1
    assert all(b - a <= int(1 / share) + 1 for a, b in itertools.pairwise(theirs))  # no long run left out
    mine = [i for i in range(count) if i not in set(theirs)]
    assert parallel._placed(mine, [f"r{i}" for i in mine], theirs, [f"r{i}" for i in theirs]) == [f"r{i}" for i in range(count)]
    assert parallel._spread(count, 0.5) == list(range(1, count, 2))


def test_with_a_thread_to_start_the_child_takes_a_little_more(answers: list[bool]) -> None:
    """The app's read runs in this process beside its share (started): the child takes THREADED_SHARE."""
    sizes: list[int] = []

    def work(items: list[int]) -> list[int]:
        sizes.append(len(items))
        return [i * 2 for i in items]

    items = list(range(200))
    assert parallel.run(items, work, started=lambda: None) == [i * 2 for i in items]
    assert answers == [True] and sizes == [200 - round(200 * parallel.THREADED_SHARE)]  # this process's own count
