"""A hostile forge API (a compromised proxy, a broken mirror): whatever it answers, cesync comment
ends in "created", "updated" or one clear error, never an internal error; and a comment id the
API gives is a number, so an edit goes to that comment's own URL and nowhere else on the API.
A real HTTP server (tests/hostile.py) answers."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cesync.core.scrubber import Scrubber
from cesync.errors import CesyncError
from cesync.forge.comments import CommentTarget, upsert_comment
from tests.hostile import HostileServer

MARKER = "<!-- cesync-plan:dev:projects/p/locations/us/apps/a -->"
BOT = {"login": "github-actions[bot]", "type": "Bot"}


def _target(server: HostileServer, provider: str) -> CommentTarget:
    return CommentTarget(provider, server.url, "o/r" if provider == "github" else "1234", 7, "tok")


def _forge(comments: Any, user: Any = None, write: tuple[int, bytes] = (201, b"{}")) -> Any:
    def answer(method: str, path: str, query: dict[str, str]) -> tuple[int, bytes]:
        if path.endswith("/user"):
            return (200, user if isinstance(user, bytes) else json.dumps(user).encode()) if user is not None else (403, b"{}")
        if method == "GET":
            return 200, comments if isinstance(comments, bytes) else json.dumps(comments).encode()
        return write

    return answer


@pytest.mark.parametrize("comment_id", ["../../../../repos/o/other/issues/1", "1?x=y", "1/../../2", 1.5, True, None, [1], "7"])
def test_an_edit_goes_only_to_a_comment_id_the_api_gave_as_a_number(comment_id: Any) -> None:
    comments = [{"id": comment_id, "body": MARKER + "\nold", "user": BOT}]
    with HostileServer(_forge(comments)) as server, pytest.raises(CesyncError, match="comment id"):
        upsert_comment(_target(server, "github"), MARKER, MARKER + "\nnew", scrubber=Scrubber())
    assert [m for m, _, _ in server.requests if m in ("PATCH", "PUT", "POST")] == []


def test_a_numbered_comment_of_ours_is_edited_at_its_own_url() -> None:
    comments = [{"id": 42, "body": MARKER + "\nold", "user": BOT}]
    with HostileServer(_forge(comments, write=(200, b"{}"))) as server:
        assert upsert_comment(_target(server, "github"), MARKER, MARKER + "\nnew", scrubber=Scrubber()) == "updated"
    assert ("PATCH", "/repos/o/r/issues/comments/42") in [(m, p) for m, p, _ in server.requests]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)
_field = st.sampled_from(["id", "body", "user", "author", "login", "type", "message", "username"])
_shaped = st.recursive(
    _json, lambda inner: st.dictionaries(_field, inner, max_size=4) | st.lists(inner, max_size=3), max_leaves=12
)
_bodies = st.one_of(_shaped.map(lambda v: json.dumps(v).encode()), st.binary(max_size=30))
_comment = st.fixed_dictionaries(
    {"id": st.one_of(st.integers(1, 9), _json), "body": st.just(MARKER + "\nold") | _json, "user": st.just(BOT) | _json},
    optional={"author": st.just({"id": 7}) | _json},
)


@pytest.fixture(scope="module")
def server() -> Any:
    with HostileServer(lambda m, p, q: (200, b"[]")) as s:
        yield s


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    provider=st.sampled_from(["github", "gitlab"]),
    comments=st.one_of(_bodies, st.lists(_comment, max_size=3)),
    user=st.one_of(st.none(), st.just({"id": 7, "login": "me"}), _bodies),
    write=st.tuples(st.sampled_from([200, 201, 400, 403, 404, 422, 500]), _bodies),
)
def test_generated_forge_replies_end_in_a_result_or_a_clear_error(
    server: HostileServer, provider: str, comments: Any, user: Any, write: tuple[int, bytes]
) -> None:
    server.answer = _forge(comments, user, write)
    with contextlib.suppress(CesyncError):
        assert upsert_comment(_target(server, provider), MARKER, MARKER + "\nnew", scrubber=Scrubber()) in ("created", "updated")
