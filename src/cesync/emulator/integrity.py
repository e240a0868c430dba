"""Referential integrity: every resource a write names must exist; a delete of what others name
is refused, or with force the references are dropped."""

from __future__ import annotations

import re
from typing import Any

from ..api import behaviour as fb
from .errors import RpcError
from .resources import COLLECTIONS, REFERRERS, drop_references, reference_values, references
from .service import Service
from .store import new_etag, now
from .wire import printed


class References(Service):
    """Reference checks of writes and deletes."""

    def _check_references(self, db: Any, parent: str, singular: str, data: dict[str, Any]) -> None:
        """Every resource of the app a write names must exist (so an apply creates what is named first).

        A tool's own reference (``agentTool.agent``) is not checked: tools come first in
        every apply order, before the agents they may hand over to.
        """
        violations = self._malformed_references(parent, singular, data)
        if singular in ("tool", "toolset"):
            self._refuse(singular, violations)
            return
        message = "App" if singular == "app" else next(c.message for c in COLLECTIONS.values() if c.singular == singular)
        for path, name, collection, rid in references(data, parent):
            if fb.name_unchecked(message, path):
                continue  # CES accepts a name of nothing here (api.behaviour NAME_UNCHECKED cites the sample)
            if name != data.get("name") and self.store.get(db, parent, collection, rid) is None:
                at = singular + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
                violations.append({"field": at, "description": f"{name} does not exist"})
        self._refuse(singular, violations)

    @staticmethod
    def _malformed_references(parent: str, singular: str, data: dict[str, Any]) -> list[dict[str, str]]:
        """A resource-reference field (REFERENCE_FIELDS) must hold a full name of this app's resource
        of the referenced type (``versions/-``, the draft, included): a bare id or ``tools/x`` is refused."""
        collection = "apps" if singular == "app" else next(c.name for c in COLLECTIONS.values() if c.singular == singular)
        found = []
        for path, value, wanted in reference_values(collection, data):
            prefix = f"{parent}/{wanted}/"
            rid = value[len(prefix) :] if value.startswith(prefix) else ""
            if rid and "/" not in rid:
                continue
            if wanted == "tools" and re.fullmatch(re.escape(parent) + r"/toolsets/[^/]+/tools/[^/]+", value):
                continue  # a toolset's tool (``{toolset}/tools/{id}``) is a tool too
            at = singular + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
            found.append({"field": at, "description": f"{value!r} is not the name of a {wanted[:-1]} of {parent}"})
        return found

    @staticmethod
    def _refuse(singular: str, violations: list[dict[str, str]]) -> None:
        if violations:
            raise RpcError(
                "INVALID_ARGUMENT",
                f"invalid {singular}: " + "; ".join(f"{v['field']}: {v['description']}" for v in violations),
                details=[{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": violations}],
            )

    def _referrers(self, db: Any, parent: str, target: str) -> list[tuple[str, str, dict[str, Any]]]:
        """(collection or 'apps', id, data) of everything naming ``target``."""
        found: list[tuple[str, str, dict[str, Any]]] = []
        app = self.store.get_app(db, parent)
        candidates = [("apps", "", app.data)] if app is not None else []
        candidates += self.store.mentioning(db, parent, target, REFERRERS)
        for collection, rid, data in candidates:
            if data.get("name") == target:
                continue
            if any(n == target or n.startswith(f"{target}/tools/") for _, n, _, _ in references(data, parent)):
                found.append((collection, rid, data))
        return found

    def _unreference(self, db: Any, parent: str, target: str, users: list[tuple[str, str, dict[str, Any]]]) -> None:
        for collection, rid, data in users:
            changed = drop_references(data, target)
            changed["updateTime"], changed["etag"] = now(), new_etag()
            if collection == "examples":
                # Example.invalid (output only): "The example may become invalid if referencing resources
                # are deleted. Invalid examples will not be used as few-shot examples." (google-cloud-ces)
                changed["invalid"] = True
            if collection == "apps":
                self.store.put_app(db, parent, printed("apps", changed))
            else:
                self.store.put(db, parent, collection, rid, printed(collection, changed))
