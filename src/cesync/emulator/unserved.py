"""The methods of Google's discovery documents for CES that the emulator does not serve, answered
UNIMPLEMENTED (HTTP 501, google.rpc.Code 12, in Google's error shape) rather than NOT_FOUND, so a
client can tell "the emulator lacks this method" from "this resource does not exist".

The table is the discovery documents' own (ces.v1.json and ces.v1beta.json, revision 20261016, in
google-api-python-client 2.202.0): every method there, less those the emulator serves.
tests/emulator/test_unserved.py walks both documents and fails when a method is neither served nor
here. What they have in common: they run conversations (sessions, A2A messages, the assistant),
generate content with a model, read the location or its security settings, or export to Cloud
Storage, none of which an emulator of an app's configuration can do faithfully.
"""

from __future__ import annotations

import re
from functools import cache

from .errors import RpcError

__all__ = ["UNSERVED", "refuse_unserved"]

_BOTH, _BETA = ("v1", "v1beta"), ("v1beta",)
# (method id without "ces.projects.locations.", HTTP method, flatPath after the version: {location}
# is projects/{projectsId}/locations/{locationsId}, {app} is {location}/apps/{appsId}, versions served)
UNSERVED: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("get", "GET", "{location}", _BOTH),
    ("list", "GET", "projects/{projectsId}/locations", _BOTH),
    ("apps.generateOnboardingSuggestions", "POST", "{app}:generateOnboardingSuggestions", _BOTH),
    ("apps.getExtendedAgentCard", "GET", "{app}/extendedAgentCard", _BOTH),
    ("apps.assistantSessions.cancelAssistantTurn", "POST", "{app}/assistantSessions/{id}:cancelAssistantTurn", _BOTH),
    ("apps.assistantSessions.streamChatAiAssistant", "POST", "{app}/assistantSessions/{id}:streamChatAiAssistant", _BOTH),
    ("apps.conversations.batchDelete", "POST", "{app}/conversations:batchDelete", _BOTH),
    ("apps.conversations.delete", "DELETE", "{app}/conversations/{id}", _BOTH),
    ("apps.conversations.get", "GET", "{app}/conversations/{id}", _BOTH),
    ("apps.conversations.list", "GET", "{app}/conversations", _BOTH),
    ("apps.deployments.getExtendedAgentCard", "GET", "{app}/deployments/{id}/extendedAgentCard", _BOTH),
    ("apps.deployments.message.send", "POST", "{app}/deployments/{id}/message:send", _BOTH),
    ("apps.deployments.message.stream", "POST", "{app}/deployments/{id}/message:stream", _BOTH),
    ("apps.message.send", "POST", "{app}/message:send", _BOTH),
    ("apps.message.stream", "POST", "{app}/message:stream", _BOTH),
    ("apps.sessions.generateChatToken", "POST", "{app}/sessions/{id}:generateChatToken", _BOTH),
    ("apps.sessions.runSession", "POST", "{app}/sessions/{id}:runSession", _BOTH),
    ("apps.sessions.streamRunSession", "POST", "{app}/sessions/{id}:streamRunSession", _BOTH),
    ("apps.versions.getExtendedAgentCard", "GET", "{app}/versions/{id}/extendedAgentCard", _BOTH),
    ("apps.versions.message.send", "POST", "{app}/versions/{id}/message:send", _BOTH),
    ("apps.versions.message.stream", "POST", "{app}/versions/{id}/message:stream", _BOTH),
    ("getSecuritySettings", "GET", "{location}/securitySettings", _BETA),
    ("updateSecuritySettings", "PATCH", "{location}/securitySettings", _BETA),
    ("apps.chatAiAssistant", "POST", "{app}:chatAiAssistant", _BETA),
    ("apps.generateAppResource", "POST", "{app}:generateAppResource", _BETA),
    ("apps.importEvaluations", "POST", "{app}:importEvaluations", _BETA),
    ("apps.runAssistant", "POST", "{app}:runAssistant", _BETA),
    ("apps.testPersonaVoice", "POST", "{app}:testPersonaVoice", _BETA),
    ("apps.assistantSessions.create", "POST", "{app}/assistantSessions", _BETA),
    ("apps.assistantSessions.delete", "DELETE", "{app}/assistantSessions/{id}", _BETA),
    ("apps.assistantSessions.get", "GET", "{app}/assistantSessions/{id}", _BETA),
    ("apps.assistantSessions.list", "GET", "{app}/assistantSessions", _BETA),
    ("apps.conversations.generateEvaluation", "POST", "{app}/conversations/{id}:generateEvaluation", _BETA),
    ("apps.evaluationRuns.export", "POST", "{app}/evaluationRuns:export", _BETA),
    ("apps.evaluations.export", "POST", "{app}/evaluations:export", _BETA),
    ("apps.evaluations.uploadEvaluationAudio", "POST", "{app}/evaluations/{id}:uploadEvaluationAudio", _BETA),
    ("apps.evaluations.results.export", "POST", "{app}/evaluations/{id}/results:export", _BETA),
    (
        "apps.evaluations.results.runEvaluationResultMetrics",
        "POST",
        "{app}/evaluations/{id}/results/{id}:runEvaluationResultMetrics",
        _BETA,
    ),
)


@cache
def _patterns(version: str) -> tuple[tuple[str, str, re.Pattern[str]], ...]:
    out = []
    for method_id, http, path, versions in UNSERVED:
        if version not in versions:
            continue
        text = path.replace("{app}", "{location}/apps/{id}").replace("{location}", "projects/{id}/locations/{id}")
        pattern = "^" + re.escape(text).replace(re.escape("{id}"), "[^/:]+").replace(re.escape("{projectsId}"), "[^/:]+")
        out.append((f"ces.projects.locations.{method_id}", http, re.compile(pattern + r"\Z")))
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
