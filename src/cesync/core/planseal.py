"""What binds a saved plan to what it was made from: the keyed digest of the rendered repo, each
change's body hash, and the seal over everything the file holds (HMAC-SHA256 under the binding key)."""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import replace
from typing import Any

from ..api.resource import Resource
from .plan import Plan
from .sensitive import scrub


def desired_digest(env: str, app: str, desired: list[Resource], key: bytes = b"") -> str:
    """Keyed hash of the rendered desired configuration, sensitive fields unmasked (what apply would send).

    HMAC-SHA256 under key (cesync.core.sensitive.binding_key) of json.dumps({"env": env, "app": app,
    "resources": [[kind, id, body], ...]}, sort_keys=True), fed one resource at a time: the whole
    text at once (and its bytes) was the peak of a 10,000-tool plan's memory.
    """
    resources = sorted(((d.kind.name, d.id, d.body) for d in desired), key=lambda d: (d[0], d[1]))
    digest = hmac.new(key, f'{{"app": {json.dumps(app)}, "env": {json.dumps(env)}, "resources": ['.encode(), "sha256")
    for n, resource in enumerate(resources):
        digest.update(((", " if n else "") + json.dumps(resource, sort_keys=True)).encode())
    digest.update(b"]}")
    return "hmac-sha256:" + digest.hexdigest()


def _keyed(key: bytes, data: Any) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return "hmac-sha256:" + hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def bind(plan: Plan, key: bytes) -> Plan:
    """The plan with each change's unmasked body hashed and the whole file sealed, under key.

    The seal covers every field the file holds (environment, app, endpoint, digest, prune,
    targets, managed, every change with its body hash, the sensitive-field list and hashes),
    so an edit of any of them is refused before apply opens a connection (see seal_matches).
    """
    changes = tuple(replace(c, body_hash=_keyed(key, c.body) if c.body is not None else "") for c in plan.changes)
    return replace(plan, changes=changes, seal=seal_of(replace(plan, changes=changes), key))


def seal_of(plan: Plan, key: bytes) -> str:
    """The keyed hash of everything the saved file holds but its seal, as the file holds it: with
    every known sensitive value scrubbed, as plan --out writes it (a remote body may hold one)."""
    text = json.dumps(replace(plan, seal="").public(), sort_keys=True, separators=(",", ":"))
    return "hmac-sha256:" + hmac.new(key, scrub(text).encode(), hashlib.sha256).hexdigest()


def seal_matches(plan: Plan, key: bytes) -> bool:
    """A saved plan's seal is right, and its masked fields hold only the mask (the seal sees them masked)."""
    public = plan.public()
    as_read = [json.loads(json.dumps(c.body)) for c in plan.changes]
    if [c["body"] for c in public["changes"]] != as_read:
        return False
    return hmac.compare_digest(plan.seal.encode(), seal_of(plan, key).encode())
