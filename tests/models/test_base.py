"""models/base: what a resource-name field says about a value that is not a name.

Finding 8 of issue #34: a sensitive value in such a field (a bearer token written where a
context variable's name belongs) was shown as its first six characters and its length.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from cesync.models import messages
from tests.helpers import cesync, make_repo

# Anything a secret could be: printable, never a resource name (a name is shown, it helps).
SECRETS = st.text(st.characters(min_codepoint=33, max_codepoint=0x2FFF), min_size=1, max_size=80).filter(
    lambda s: not s.startswith("projects/") and not s.startswith("$context.variables.")
)


def _said(model: type, data: dict[str, object]) -> str:
    with pytest.raises(ValidationError) as exc:
        model.model_validate(data)
    return " ".join(e["msg"] for e in exc.value.errors())  # what cesync prints (repo/loading.pydantic_problem)


@given(a=SECRETS, b=SECRETS)
def test_a_rejected_name_says_nothing_of_the_value(a: str, b: str) -> None:
    """The message is the same whatever the value: no prefix, suffix or length of it."""
    for model, field, rest in (
        (messages.BearerTokenConfig, "token", {}),
        (messages.ApiKeyConfig, "apiKeySecretVersion", {"keyName": "k", "requestLocation": "HEADER"}),
    ):
        said_a, said_b = _said(model, {field: a, **rest}), _said(model, {field: b, **rest})
        assert said_a == said_b, (said_a, said_b)


def test_validate_says_nothing_of_a_sensitive_token(tmp_path: Path) -> None:
    token = "pw8Kq2" + "x" * 24
    toolset = (
        "openApiToolset:\n  openApiSchema: |\n    openapi: 3.0.0\n    info: {title: t, version: '1'}\n    paths: {}\n"
        "  apiAuthentication:\n    bearerTokenConfig:\n      token: ${INVENTORY_TOKEN}\n"
    )
    root = make_repo(tmp_path, {"toolsets/inv.yaml": toolset})
    config = root / "cesync.yaml"
    config.write_text(config.read_text().replace("environments:", "defaults:\n  sensitive: [INVENTORY_TOKEN]\nenvironments:"))
    r = cesync("validate", "--dir", str(root), env={"CESYNC_VAR_INVENTORY_TOKEN": token})
    said = r.stdout + r.stderr
    assert r.returncode == 1 and "bearerTokenConfig.token" in said and "$context.variables" in said, said
    assert token[:6] not in said and str(len(token)) not in said.replace("inv.yaml:8:14", ""), said


def test_each_class_checks_every_field_a_default_would_leave_unset() -> None:
    """ProtoModel.__init_subclass__ puts the REQUIRED-default check on a class's REQUIRED fields
    alone: it covers every field the check can refuse (_required_defaults), in every message; and
    the oneof check on every class that has oneofs, and on no other."""
    from cesync.models import ProtoModel, evaluations, other
    from cesync.models.base import _required_defaults

    classes = [getattr(messages, n) for n in messages.__all__] + [*vars(other).values(), *vars(evaluations).values()]
    models = {c for c in classes if isinstance(c, type) and issubclass(c, ProtoModel) and c is not ProtoModel}
    refusing = 0
    for model in models:
        check = model.__pydantic_decorators__.field_validators.get("_required_not_default")
        wanted = set(_required_defaults(model))
        refusing += bool(wanted)
        assert wanted <= set(check.info.fields if check else ()), model.__name__
        assert bool(model.oneofs) == ("_check_oneofs" in model.__pydantic_decorators__.model_validators), model.__name__
    assert len(models) > 300 and refusing > 50


def test_a_subclass_keeps_its_bases_required_check() -> None:
    from cesync.models import ProtoModel
    from cesync.models.base import Behavior, field_

    class Base(ProtoModel):
        name: str = field_(Behavior.REQUIRED)

    class Child(Base):
        note: str | None = field_()

    class Both(Base):
        size: int = field_(Behavior.REQUIRED)

    for model, data in (
        (Base, {"name": ""}),
        (Child, {"name": ""}),
        (Both, {"name": "", "size": 1}),
        (Both, {"name": "n", "size": 0}),
    ):
        with pytest.raises(ValidationError, match="is required and must not be"):
            model.model_validate(data)
    Both.model_validate({"name": "n", "size": 1})
