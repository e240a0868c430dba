"""The app's v1beta-only fields (evaluationSettings, evaluationPersonas): checked against v1beta's App
on /v1beta/ only, kept by an update on /v1/, left out of the app's answers on /v1/."""

from __future__ import annotations

import json
from typing import Any

from google.protobuf import json_format
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..api import descriptors as api
from .calls import answer, api_version, query, wants_enum_int
from .errors import RpcError
from .wire import Printed
from .writes import apply_mask

MAX_PERSONAS = 30  # v1beta App.evaluation_personas: "Maximum of 30 personas can be defined." (google-cloud-ces)


def beta_fields(request: Request, body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """An App body on /v1beta/: (its v1 part, its v1beta-only fields checked against v1beta's App, in
    JSON names, defaults omitted). On /v1/ the body is v1's: those fields are unknown names there."""
    names = api.beta_only_app_fields()
    if api_version(request) != "v1beta" or not any(k in names for k in body):
        return body, {}
    sent = {k: v for k, v in body.items() if k in names}
    message = api.beta_app_class()()
    try:
        json_format.ParseDict(sent, message, descriptor_pool=api.beta_pool())
    except json_format.ParseError as exc:
        violation = {"field": "app", "description": str(exc)}
        raise RpcError(
            "INVALID_ARGUMENT",
            f"invalid app: {exc}",
            details=[{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [violation]}],
        ) from None
    if len(getattr(message, "evaluation_personas")) > MAX_PERSONAS:  # noqa: B009 (a message class made at run time)
        raise RpcError("INVALID_ARGUMENT", f"invalid app: at most {MAX_PERSONAS} evaluationPersonas can be defined")
    checked = json_format.MessageToDict(message)
    return {k: v for k, v in body.items() if k not in names}, {names[k]: checked.get(names[k]) for k in sent}


def beta_mask(request: Request) -> tuple[str | None, list[str]]:
    """updateMask on /v1/ as it is; on /v1beta/ split into the v1 part and the v1beta-only App paths
    (checked against v1beta's App, in JSON names)."""
    raw = query(request).get("updateMask")
    if raw is None or api_version(request) != "v1beta":
        return raw, []
    names = api.beta_only_app_fields()
    mine = [p.strip() for p in raw.split(",") if p.strip().split(".")[0] in names]
    if not mine:
        return raw, []
    rest = ",".join(p for p in raw.split(",") if p.strip() and p.strip() not in mine)
    paths = []
    for path in mine:
        desc: Any = api.beta_app_class().DESCRIPTOR
        parts = []
        for part in path.split("."):
            f = None
            if desc is not None:
                f = desc.fields_by_name.get(part) or next((x for x in desc.fields if x.json_name == part), None)
            if f is None:
                raise RpcError("INVALID_ARGUMENT", f"invalid update_mask path '{path}': no field '{part}' in app")
            parts.append(f.json_name)
            desc = f.message_type if f.message_type is not None and not f.is_repeated else None
        paths.append(".".join(parts))
    return rest or "-", paths  # "-": the mask names v1beta fields only (nothing of v1's)


def beta_update(data: dict[str, Any], sent: dict[str, Any], paths: list[str], *, replace: bool) -> dict[str, Any]:
    """The app's v1beta-only fields after an update: what the mask names comes from the request, and
    all of them without a mask on /v1beta/; the rest as stored (an update on /v1/ leaves them)."""
    names = set(api.beta_only_app_fields().values())
    stored = {k: data.pop(k) for k in list(data) if k in names}
    if replace:
        stored = {k: v for k, v in sent.items() if v is not None}
    elif paths:
        stored = apply_mask(stored, sent, paths)
    return {**data, **stored}


def without_beta(request: Request, res: Printed) -> Response:
    """An app answer: on /v1/, without the fields only v1beta's App has."""
    names = api.beta_only_app_fields()
    if api_version(request) == "v1beta" or not any(k in res.data for k in names):
        return answer(request, res)
    data = json.loads(res.text(wants_enum_int(request)))
    return JSONResponse({k: v for k, v in data.items() if k not in names})
