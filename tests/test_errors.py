"""Every google.rpc error detail a server sends, printed (errors.detail_lines)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cesync.errors import MAX_DETAIL_LINES, detail_lines

RPC = "type.googleapis.com/google.rpc."
DETAILS: list[tuple[dict[str, Any], str]] = [
    (
        {
            "@type": RPC + "ErrorInfo",
            "reason": "RATE_LIMIT_EXCEEDED",
            "domain": "googleapis.com",
            "metadata": {"quota_metric": "ces.googleapis.com/write_requests"},
        },
        "ErrorInfo: RATE_LIMIT_EXCEEDED (domain googleapis.com; quota_metric=ces.googleapis.com/write_requests)",
    ),
    (
        {
            "@type": RPC + "BadRequest",
            "fieldViolations": [{"field": "tool.timeout", "description": "too long", "reason": "RANGE"}],
        },
        "BadRequest: tool.timeout: too long [RANGE]",
    ),
    (
        {"@type": RPC + "QuotaFailure", "violations": [{"subject": "project:p", "description": "over", "quotaMetric": "m"}]},
        "QuotaFailure: project:p: over (quotaMetric m)",
    ),
    (
        {"@type": RPC + "PreconditionFailure", "violations": [{"type": "TOS", "subject": "p", "description": "accept it"}]},
        "PreconditionFailure: TOS p: accept it",
    ),
    (
        {"@type": RPC + "Help", "links": [{"description": "Quotas", "url": "https://cloud.google.com/docs/quotas"}]},
        "Help: Quotas: https://cloud.google.com/docs/quotas",
    ),
    ({"@type": RPC + "LocalizedMessage", "locale": "en-US", "message": "Try later."}, "LocalizedMessage (en-US): Try later."),
    ({"@type": RPC + "RetryInfo", "retryDelay": "2s"}, "RetryInfo: retry after 2s"),
    (
        {"@type": RPC + "ResourceInfo", "resourceType": "ces.googleapis.com/App", "resourceName": "a", "description": "locked"},
        "ResourceInfo: ces.googleapis.com/App a: locked",
    ),
    ({"@type": RPC + "RequestInfo", "requestId": "r-1"}, "RequestInfo: request r-1"),
    ({"@type": RPC + "DebugInfo", "detail": "stack"}, "DebugInfo: stack"),
    ({"@type": "type.googleapis.com/google.cloud.ces.v1.Other", "x": 1}, 'google.cloud.ces.v1.Other: {"x":1}'),
]


@pytest.mark.parametrize(("detail", "line"), DETAILS, ids=[d["@type"].rsplit(".", 1)[-1] for d, _ in DETAILS])
def test_each_detail_type_is_one_line(detail: dict[str, Any], line: str) -> None:
    assert detail_lines([detail]) == [line]


def test_a_field_violation_is_placed_in_the_repo() -> None:
    bad = {"@type": RPC + "BadRequest", "fieldViolations": [{"field": "agent.tools[1]", "description": "no such tool"}]}
    assert detail_lines([bad], lambda f: "agents/a.yaml:4:5" if f == "agent.tools[1]" else "") == [
        "BadRequest: agents/a.yaml:4:5: agent.tools[1]: no such tool"
    ]


@given(st.lists(st.dictionaries(st.sampled_from(["@type", "fieldViolations", "links", "reason", "x"]), st.from_type(object))))
def test_any_details_print_as_printable_lines(details: list[Any]) -> None:
    """Whatever a hostile server puts in details: no exception, no control character, bounded."""
    lines = detail_lines([*details, "\x1b[2J", {"@type": RPC + "Help", "links": [{"url": "\x1b]8;;x\x07", "description": 1}]}])
    assert 0 < len(lines) <= MAX_DETAIL_LINES
    assert all(ch == "\t" or ch.isprintable() or ord(ch) > 0x9F for line in lines for ch in line)
    assert all(len(line) < 2000 for line in lines)


def test_many_violations_are_counted_past_the_limit() -> None:
    many = {"@type": RPC + "BadRequest", "fieldViolations": [{"field": f"f{i}", "description": "d"} for i in range(100)]}
    lines = detail_lines([many])
    assert len(lines) == MAX_DETAIL_LINES and lines[-1] == f"... and {100 - MAX_DETAIL_LINES + 1} more detail lines"
