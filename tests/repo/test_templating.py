"""${NAME} substitution (cesync.repo.templating): what a missing variable's message says."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cesync.repo.repo import load_repo
from tests.helpers import make_repo

NAMES = st.from_regex(r"[A-Z][A-Z0-9_]{2,12}", fullmatch=True)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(secret=NAMES, plain=NAMES)
def test_a_missing_sensitive_variable_is_not_taken_for_a_typo(
    tmp_path_factory: pytest.TempPathFactory, secret: str, plain: str
) -> None:
    # The secret is declared in cesync.yaml, so its name is right: suggesting a plain variable
    # with a close name (ORDERS_KEY -> ORDERS_URL) sends the user to the wrong one.
    if secret == plain:
        return
    tmp_path: Path = tmp_path_factory.mktemp("repo")
    config = (
        f"version: 1\ndefaults:\n  sensitive: [{secret}]\nenvironments:\n"
        f"  dev: {{endpoint: embedded, project: p, location: us, app: a, vars: {{{plain}: x}}}}\n"
    )
    tool = f"clientFunction: {{name: x, description: '${{{secret}}}'}}\n"
    files = {"cesync.yaml": config, "tools/x.yaml": tool}
    problems = [str(p) for p in load_repo(make_repo(tmp_path, files)).validate()]
    (said,) = [p for p in problems if f"sensitive variable '{secret}' is not set" in p]
    assert "did you mean" not in said
    assert f"CESYNC_DEV_VAR_{secret}" in said
