"""No module-level pattern of cesync ends in ``$``: with ``re.match`` it matches before a
trailing newline, so ``"t0\\n"`` passed as the id ``t0``, ``"30s\\n"`` as a duration and
``"NAME\\n"`` as a variable name. Anchors are ``\\Z``; hypothesis found the first one."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

import cesync


def _patterns() -> list[tuple[str, re.Pattern[str]]]:
    found, seen = [], set()
    for info in pkgutil.walk_packages(cesync.__path__, "cesync."):
        if info.name.endswith("__main__"):  # runs the command line when imported
            continue
        module = importlib.import_module(info.name)
        for attr, value in vars(module).items():
            if isinstance(value, re.Pattern) and isinstance(value.pattern, str) and id(value) not in seen:
                seen.add(id(value))  # once, under the first module that has it
                found.append((f"{info.name}.{attr}", value))
    return found


PATTERNS = _patterns()


# pydantic checks these with Rust's regex, where "$" is the end of the text (and \Z is no escape).
PYDANTIC_PATTERNS = {"cesync.repo.config.VAR_NAME"}


def test_there_are_patterns_to_check() -> None:
    from cesync.core import toolcall
    from cesync.emulator import calls
    from cesync.repo import repo

    found = {id(p) for _, p in PATTERNS}
    assert {id(repo.ID_RE), id(toolcall.FULL), id(calls.ID_RE)} <= found


def test_pydantic_patterns_refuse_a_trailing_newline() -> None:
    from pydantic import TypeAdapter, ValidationError

    from cesync.repo.config import VarName

    with pytest.raises(ValidationError):
        TypeAdapter(VarName).validate_python("NAME\n")


CHECKED = [(n, p) for n, p in PATTERNS if n not in PYDANTIC_PATTERNS]


@pytest.mark.parametrize(("name", "pattern"), CHECKED, ids=[n for n, _ in CHECKED])
def test_no_pattern_ends_with_a_dollar(name: str, pattern: re.Pattern[str]) -> None:
    assert not (pattern.pattern.endswith("$") and not pattern.pattern.endswith("\\$")), (
        f"{name} ends with '$', which also matches before a trailing newline: end it with \\Z"
    )
