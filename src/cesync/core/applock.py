"""The app's lock (App.locked) and a plan: whether the plan changes it, and how the two meet."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..api import behaviour as fb
from ..api.kinds import THE_APP
from .plan import Change

LOCK_FIELDS = fb.fields(THE_APP.model_name, fb.APP_LOCK)  # ("locked",)


def lock_change(changes: Sequence[Change]) -> bool | None:
    """What the plan does to the app lock: True locks it, False unlocks it, None leaves it."""
    for c in changes:
        if c.kind.singleton and c.action in ("create", "update"):
            body = c.body or {}
            if any(f in c.update_mask for f in LOCK_FIELDS) or (c.action == "create" and any(body.get(f) for f in LOCK_FIELDS)):
                return any(bool(body.get(f)) for f in LOCK_FIELDS)
    return None


def is_locked(app: Mapping[str, Any] | None) -> bool:
    return app is not None and any(app.get(f) is True for f in LOCK_FIELDS)


def lock_notice(remote_app: Mapping[str, Any] | None, changes: Sequence[Change]) -> str:
    """How App.locked ("modifications to the app resources will be rejected") meets the plan."""
    setting = f"App.{LOCK_FIELDS[0]}" if LOCK_FIELDS else "App.locked"
    change = lock_change(changes)
    if is_locked(remote_app):
        if change is False:
            return f"the app is locked ({setting} is true); the repo unlocks it (locked: false): apply unlocks it first"
        if changes:
            return (
                f"the app is locked ({setting} is true): apply will stop before its first write. Unlock it in the "
                "console, or set 'locked: false' in app.yaml to have apply unlock it first"
            )
        return f"the app is locked ({setting} is true)"
    if change is True:
        return "the repo locks the app (locked: true): apply locks it last, after every other write"
    return ""
