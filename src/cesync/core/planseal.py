"""What binds a saved plan to what it was made from: the keyed digest of the rendered repo, each
change's body hash, and the seal over everything the file holds (HMAC-SHA256 under the binding key)."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from ..api.resource import Resource
from .plan import Plan

_BATCH = 256  # resources per json text of desired_digest


def desired_digest(env: str, app: str, desired: list[Resource], key: bytes = b"") -> str:
    """Keyed hash of the rendered desired configuration, sensitive fields unmasked (what apply would send).

    HMAC-SHA256 under key (binding_key below) of json.dumps({"env": env, "app": app,
    "resources": [[kind, id, body], ...]}, sort_keys=True), fed a batch of resources at a time: the
    whole text at once (and its bytes) was the peak of a 10,000-tool plan's memory, and one
    json.dumps per resource spent more on the calls than on the text.
    """
    resources = sorted(((d.kind.name, d.id, d.body) for d in desired), key=lambda d: (d[0], d[1]))
    digest = hmac.new(key, f'{{"app": {json.dumps(app)}, "env": {json.dumps(env)}, "resources": ['.encode(), "sha256")
    # json.dumps(..., sort_keys=True), made once; a rendered body is a tree (parsed YAML), so the
    # check for a container inside itself, which writes no byte of the text, is left out
    encoder = json.JSONEncoder(sort_keys=True, check_circular=False)
    for start in range(0, len(resources), _BATCH):
        # a list's text is "[" + its items' texts joined by ", " + "]": the brackets cut, as one run of the whole
        text = encoder.encode(resources[start : start + _BATCH])[1:-1]
        digest.update(((", " if start else "") + text).encode())
    digest.update(b"]}")
    return "hmac-sha256:" + digest.hexdigest()


def _keyed(key: bytes, data: Any) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return "hmac-sha256:" + hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def bind(plan: Plan, key: bytes, scrub: Callable[[str], str]) -> Plan:
    """The plan with each change's unmasked body hashed and the whole file sealed, under key.
    scrub: the run's (Scrubber.scrub), as plan --out will write the file.

    The seal covers every field the file holds (environment, app, endpoint, digest, prune,
    targets, managed, every change with its body hash, the sensitive-field list and hashes),
    so an edit of any of them is refused before apply opens a connection (see seal_matches).
    """
    changes = tuple(replace(c, body_hash=_keyed(key, c.body) if c.body is not None else "") for c in plan.changes)
    return replace(plan, changes=changes, seal=seal_of(replace(plan, changes=changes), key, scrub))


def seal_of(plan: Plan, key: bytes, scrub: Callable[[str], str]) -> str:
    """The keyed hash of everything the saved file holds but its seal, as the file holds it: with
    every known sensitive value scrubbed, as plan --out writes it (a remote body may hold one)."""
    text = json.dumps(replace(plan, seal="").public(), sort_keys=True, separators=(",", ":"))
    return "hmac-sha256:" + hmac.new(key, scrub(text).encode(), hashlib.sha256).hexdigest()


def seal_matches(plan: Plan, key: bytes, scrub: Callable[[str], str]) -> bool:
    """A saved plan's seal is right, and its masked fields hold only the mask (the seal sees them masked)."""
    public = plan.public()
    as_read = [json.loads(json.dumps(c.body)) for c in plan.changes]
    if [c["body"] for c in public["changes"]] != as_read:
        return False
    return hmac.compare_digest(plan.seal.encode(), seal_of(plan, key, scrub).encode())


# --- the keyed hashes of sensitive values (see core/sensitive.py) -------------------------


def new_salt() -> str:
    return secrets.token_hex(16)


def seal(values: Mapping[str, str], salt: str, key: bytes) -> dict[str, str]:
    """NAME -> keyed hash of its value (see the module docstring)."""
    out: dict[str, str] = {}
    for name in sorted(values):
        stretched = hashlib.scrypt(values[name].encode(), salt=bytes.fromhex(salt) + name.encode(), n=2**14, r=8, p=1, dklen=32)
        out[name] = "hmac-sha256:" + hmac.new(key, stretched, hashlib.sha256).hexdigest()
    return out


def binding_key(values: Mapping[str, str], salt: str, key: bytes) -> bytes:
    """The key of a saved plan's digest, body hashes and seal: ``HMAC-SHA256(key, scrypt(values, salt))``.

    They cover the unmasked bodies, so they are keyed like the values' own hashes: testing a
    guess of a value costs a scrypt, and with CESYNC_PLAN_KEY set it cannot be done at all.
    Without sensitive values there is nothing to stretch (the bodies are in the file).
    """
    material = json.dumps(sorted(values.items())).encode()
    stretched = (
        hashlib.scrypt(material, salt=bytes.fromhex(salt) + b"cesync-plan", n=2**14, r=8, p=1, dklen=32) if values else b""
    )
    return hmac.new(key, b"cesync plan binding\0" + stretched, hashlib.sha256).digest()


def same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())
