"""core.documents: Python code and documents in resource bodies, read without dying on their shape."""

from __future__ import annotations

import pytest

from cesync.core.documents import python_functions

# Python's parser gives up on these with MemoryError (its stack overflows) or RecursionError, not
# SyntaxError: a hostile server's tool, or the app's copy of one, must not end the run with them.
TOO_COMPLEX = [
    "def f(x: int) -> int:\n    return " + "-" * 100_000 + "1\n",
    "x = " + "not " * 100_000 + "1\n",
]


@pytest.mark.parametrize("code", TOO_COMPLEX, ids=["unary", "not"])
def test_code_too_complex_to_parse_is_a_value_error_saying_so(code: str) -> None:
    with pytest.raises(ValueError, match="too complex"):
        python_functions(code)
