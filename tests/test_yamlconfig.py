"""The YAML() instances of yamlconfig: the editor writes back what it read, floats included."""

from __future__ import annotations

from io import StringIO

from hypothesis import given, settings
from hypothesis import strategies as st

from cesync import yamlconfig
from cesync.models.evaluations import Evaluation
from cesync.repo.fmt import format_text

FLOAT_TEXT = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda f: f"{f:.17e}"),
    st.sampled_from([".inf", "-.Inf", ".NaN", "1e3", "0.10", "1.50e+02", "-0.0"]),
)


def _round_trip(text: str) -> str:
    yaml = yamlconfig.editor()
    buf = StringIO()
    yaml.dump(yaml.load(text), buf)
    return buf.getvalue()


@settings(max_examples=200, deadline=None)
@given(FLOAT_TEXT)
def test_the_editor_writes_a_float_as_it_was_written(written: str) -> None:
    # ruamel's own round trip writes 5.799650104237149e+290 back as ...148e+290.
    text = f"a: {written}  # note\nb: [{written}, x]\n"
    assert _round_trip(text) == text


def test_an_anchored_float_keeps_its_anchor() -> None:
    text = "a: &rate 2.5\nb: *rate\n"
    assert _round_trip(text) == text


def test_other_instances_keep_ruamel_s_own_floats() -> None:
    data = yamlconfig.positioned().load("a: 1.5\n")
    assert type(data["a"]).__name__ == "ScalarFloat"


@settings(max_examples=100, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_fmt_reorders_a_file_whose_floats_ruamel_would_reformat(value: float) -> None:
    text = f"scenario:\n  task: X\n  taskCompletionBehavior: TASK_COMPLETION_BEHAVIOR_UNSPECIFIED\n  variableOverrides:\n    X: {value!r}\ndisplayName: X\n"
    out = format_text(text, Evaluation)
    assert out.startswith("displayName: X\n"), out  # fmt did not give up on the file
    assert f"X: {value!r}\n" in out
