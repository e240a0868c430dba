"""The example app's picture on the getting-started page is what `cesync graph` draws, and parses."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import EXAMPLES, ROOT
from tests.docs.pages import examples
from tests.helpers import cesync, mermaid_parse

PAGE = ROOT / "docs" / "getting-started.md"


def test_the_getting_started_picture_is_the_command_s_output(tmp_path: Path) -> None:
    [shown] = [e.text for e in examples(PAGE) if e.lang == "mermaid"]
    repo = tmp_path / "support-bot"
    shutil.copytree(EXAMPLES / "support-bot", repo, ignore=shutil.ignore_patterns(".cesync"))
    drawn = cesync("graph", "--env", "local", cwd=repo)
    assert drawn.returncode == 0, drawn.stderr
    assert shown == drawn.stdout, "run `cesync graph --env local` in examples/support-bot and paste it into the page"
    [parsed] = mermaid_parse([shown])
    assert parsed["ok"], parsed
