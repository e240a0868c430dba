"""render.release: a release's report as lines and Markdown; names from the app carry no markup."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cesync.escape import output
from cesync.render.release import event_line, render_release_markdown, render_release_text
from tests.hostile_text import hostile, markdown_problems, terminal_and_ci_problems

APP = "projects/p/locations/l/apps/a"


def report(version: str) -> dict[str, object]:
    target = f"{APP}/versions/{version}"
    step = {
        "step": 1,
        "of": 1,
        "traffic": {f"{APP}/versions/-": {"before": 100, "after": 0}, target: {"before": 0, "after": 100}},
    }
    return {
        "environment": "prod",
        "deployment": f"{APP}/deployments/web",
        "target": target,
        "previous": f"{APP}/versions/-",
        "outcome": "rolled back",
        "schedule": [{**step, "holdSeconds": 60.0, "alreadyThere": False}],
        "events": [
            {"event": "step", **step},
            {"event": "gate", "against": target, "step": 1, "passed": False, "counts": {"failed": 2}},
            {"event": "rollback", "serving": f"{APP}/versions/-"},
        ],
    }


def test_the_lines_say_each_event() -> None:
    text = render_release_text(report("v2"))
    assert "step 1/1: - 100% -> 0%, v2 0% -> 100%, hold 60s, then the gate" in text
    assert "gate step 1: FAILED against v2 (2 failed)" in text
    assert "rolled back: - serves all traffic again" in text and text.endswith("Release: rolled back.\n")


@given(st.text(min_size=1, max_size=40).filter(lambda t: "/" not in t))
def test_a_version_name_cannot_add_markup(version: str) -> None:
    md = render_release_markdown(report(version))
    for line in md.splitlines()[2:]:  # after the heading: every app text shown plain
        assert "<script" not in line.lower()
    assert all(ch not in event_line({"event": "rollback", "serving": version}) for ch in "`<>|*_[]\n")


@given(version=hostile.filter(lambda t: "/" not in t), deployment=hostile.filter(lambda t: "/" not in t))
def test_a_hostile_server_s_names_are_data_in_every_channel(version: str, deployment: str) -> None:
    """A version or deployment name a hostile server sends (a console user's ids are CES's
    [a-z0-9-]) in the release report: no mention, link, HTML or fake line of theirs in the
    Markdown, nothing a terminal or CI runner would act on in the text."""
    data = report(version)
    data["deployment"] = f"{APP}/deployments/{deployment}"
    data["events"] = [*data["events"], {"event": "done", "message": version}]  # type: ignore[list-item]
    assert markdown_problems(render_release_markdown(data)) == []
    assert terminal_and_ci_problems(output(render_release_text(data))) == []
