"""render.release: a release's report as lines and Markdown; names from the app carry no markup."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cesync.render.release import event_line, render_release_markdown, render_release_text

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
