"""$env_var substituted into parsed data means the same as substituted into the text."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from cesync.core import documents as checks
from cesync.core.documents import parse_document, substitute_url

URLS = st.one_of(
    st.from_regex(r"\Ahttps?://[a-z0-9.-]{1,12}(:[0-9]{1,5})?(/[A-Za-z0-9._~%?&=+@-]{0,10}){0,3}\Z"),
    st.text(min_size=1, max_size=20),  # anything else is parsed from the text
)
TEMPLATES = [
    "openapi: 3.0.0\nservers:\n  - url: $env_var\npaths: {}\n",
    "openapi: 3.0.0\nservers: [{url: $env_var}, {url: '$env_var/v2'}]\npaths: {}\n",
    'openapi: 3.0.0\nservers:\n  - url: "$env_var/x"  # $env_var\n    description: |\n      at $env_var\n',
    "openapi: 3.0.0\npaths:\n  $env_var/x: {}\n",  # in a key
    "openapi: 3.0.0\nx: $env_var\ny: [$env_var, $env_var:]\n",
    json.dumps({"openapi": "3.0.0", "servers": [{"url": "$env_var"}], "paths": {"/a": {"get": {}}}}),
    "$env_var\n",
    "openapi: 3.0.0\nservers: [oops\n",  # not parseable
]


def _parsed(text: str) -> object:
    try:
        return parse_document(text)
    except ValueError as exc:
        return str(exc)


@settings(max_examples=300, deadline=None)
@given(template=st.sampled_from(TEMPLATES), url=URLS)
def test_substituted_data_is_what_parsing_the_substituted_text_gives(template: str, url: str) -> None:
    text = substitute_url(template, "$env_var", url)
    assert text == template.replace("$env_var", url)
    derived = _parsed(text)
    checks._SUBSTITUTED.clear()
    checks._parse_document.cache_clear()
    assert derived == _parsed(text)


def test_who_made_a_tool_call_is_output_only_and_never_compared() -> None:
    """agentName, parentToolCallId (rev 20261016) and targetApp (the seeds) on an example's tool
    calls and responses: the server's to set, so a remote that has them plans nothing."""
    from cesync.api.kinds import KINDS
    from cesync.core.normalize import canonical

    said = {"agentName": "Contract Architect", "parentToolCallId": "c0", "targetApp": "projects/p/locations/us/apps/a"}
    call = {"tool": "projects/p/locations/us/apps/a/tools/t", "args": {"x": 1}}
    answer = {"tool": "projects/p/locations/us/apps/a/tools/t", "response": {"ok": True}}
    chunks = [{"toolCall": call}, {"toolResponse": answer}]
    remote_chunks = [{"toolCall": {**call, **said}}, {"toolResponse": {**answer, **said}}]
    desired = {"displayName": "e", "messages": [{"role": "agent", "chunks": chunks}]}
    remote = {"displayName": "e", "messages": [{"role": "agent", "chunks": remote_chunks}]}
    kind = KINDS["example"]
    assert canonical(kind, "e", remote).body == canonical(kind, "e", desired).body
    assert canonical(kind, "e", remote).unknown == []
