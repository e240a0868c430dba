"""The sensitive paths of rendered bodies and the values the run's scrubber is told of."""

from __future__ import annotations

from pathlib import Path

from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.core.scrubber import Scrubber
from cesync.pipeline.masking import remember_sensitive, sensitive_fields
from cesync.repo.repo import load_repo
from tests.helpers import make_repo

CREDENTIALS = {"authCode": "one-time-code-1234", "pin": "9876"}


def _desired() -> list[Resource]:
    deployment = {"displayName": "d", "channelProfile": {}, "whatsappCredentials": CREDENTIALS}
    return [
        Resource(KINDS["tool"], "t1", {"clientFunction": {"name": "f"}}),
        Resource(KINDS["deployment"], "d", deployment),
        Resource(KINDS["tool"], "t2", {"clientFunction": {"name": "g"}}),
        Resource(KINDS["deployment"], "quiet", {"displayName": "q", "channelProfile": {}}),
    ]


def test_only_the_input_only_fields_set_are_sensitive_without_sensitive_variables(tmp_path: Path) -> None:
    repo = load_repo(make_repo(tmp_path, {}))
    env = repo.env(None)
    assert not repo.sensitive_names(env)
    assert sensitive_fields(repo, env, _desired(), {}) == {("deployment", "d"): [("whatsappCredentials",)]}


def test_the_scrubber_is_told_each_string_of_an_input_only_field(tmp_path: Path) -> None:
    repo = load_repo(make_repo(tmp_path, {}))
    scrubber = Scrubber()
    remember_sensitive(scrubber, repo, {}, _desired())
    assert scrubber.scrub("code one-time-code-1234, pin 9876, tool f") == "code (sensitive), pin (sensitive), tool f"
