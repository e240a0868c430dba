"""The methods of Google's discovery documents for CES that the emulator does not serve, answered
UNIMPLEMENTED (HTTP 501, google.rpc.Code 12, in Google's error shape) rather than NOT_FOUND, so a
client can tell "the emulator lacks this method" from "this resource does not exist".

The list is every method of Google's discovery documents (ces.v1.json and ces.v1beta.json,
revision 20261016, in google-api-python-client 2.202.0) less those the emulator serves; where each
lives comes from cesync's API description, which holds those documents' methods (methods.py).
tests/emulator/test_unserved.py calls every method of both documents and fails when one is neither
served nor here. What they have in common: they run conversations (sessions, A2A messages, the assistant),
generate content with a model, read the location or its security settings, or export to Cloud
Storage, none of which an emulator of an app's configuration can do faithfully.
"""

from __future__ import annotations

import re
from functools import cache

from .errors import RpcError
from .methods import methods

__all__ = ["PREFIX", "UNSERVED", "refuse_unserved"]

# Discovery method ids without their common "ces.projects.locations." prefix. Where each lives (verb,
# path) and on which versions is the API description's (methods.py).
UNSERVED: tuple[str, ...] = (
    # the location itself and its security settings
    "get",
    "list",
    "getSecuritySettings",
    "updateSecuritySettings",
    # conversations: sessions, A2A messages, the A2A agent cards, recorded conversations
    "apps.sessions.generateChatToken",
    "apps.sessions.runSession",
    "apps.sessions.streamRunSession",
    "apps.message.send",
    "apps.message.stream",
    "apps.deployments.message.send",
    "apps.deployments.message.stream",
    "apps.versions.message.send",
    "apps.versions.message.stream",
    "apps.getExtendedAgentCard",
    "apps.deployments.getExtendedAgentCard",
    "apps.versions.getExtendedAgentCard",
    "apps.conversations.batchDelete",
    "apps.conversations.delete",
    "apps.conversations.get",
    "apps.conversations.list",
    "apps.conversations.generateEvaluation",
    # the assistant and what a model generates
    "apps.assistantSessions.cancelAssistantTurn",
    "apps.assistantSessions.streamChatAiAssistant",
    "apps.assistantSessions.create",
    "apps.assistantSessions.delete",
    "apps.assistantSessions.get",
    "apps.assistantSessions.list",
    "apps.chatAiAssistant",
    "apps.runAssistant",
    "apps.generateAppResource",
    "apps.generateOnboardingSuggestions",
    "apps.testPersonaVoice",
    "apps.evaluations.results.runEvaluationResultMetrics",
    # evaluations moved in and out through Cloud Storage
    "apps.importEvaluations",
    "apps.evaluations.uploadEvaluationAudio",
    "apps.evaluations.export",
    "apps.evaluationRuns.export",
    "apps.evaluations.results.export",
)
PREFIX = "ces.projects.locations."


@cache
def _patterns(version: str) -> tuple[tuple[str, str, re.Pattern[str]], ...]:
    """(method id, verb, path pattern below /VERSION/) of the unserved methods the version has."""
    out = []
    described = methods(version)
    for short in UNSERVED:
        method = described.get(PREFIX + short)
        if method is None:
            continue  # a method of the other version only
        path = str(method["path"]).split("/", 1)[1]  # without its "v1/"
        pattern = re.sub(r"\\\{\w+\\\}", "[^/:]+", re.escape(path))
        out.append((PREFIX + short, str(method["httpMethod"]), re.compile(f"^{pattern}\\Z")))
    return tuple(out)


def refuse_unserved(version: str, method: str, path: str) -> None:
    """UNIMPLEMENTED when (method, path) is a method of the discovery document the emulator does not serve."""
    for method_id, http, pattern in _patterns(version):
        if http == method and pattern.match(path):
            raise RpcError(
                "UNIMPLEMENTED",
                f"{method_id} is not served by the cesync emulator, which serves an app's configuration "
                "(see 'What it does not serve' in the emulator's documentation)",
            )
