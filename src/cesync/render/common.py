"""Helpers shared by the renderers (pure)."""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from typing import Any

from ..api.kinds import KINDS, kind_of_name
from ..api.words import count
from ..core.plan import Plan
from ..core.yamlout import to_yaml

SYMBOL = {"create": "+", "update": "~", "delete": "-"}
VERB = {"create": "created", "update": "updated in place", "delete": "deleted"}


def as_text(value: Any) -> str:
    """A value as people read it: multi-line strings as they are, structures as YAML."""
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return to_yaml(value)
    return json.dumps(value)


def is_multiline(before: Any, after: Any) -> bool:
    return any(isinstance(v, (dict, list)) or (isinstance(v, str) and "\n" in v) for v in (before, after))


def unified(before: Any, after: Any, path: str) -> list[str]:
    a = as_text(before).splitlines() if before is not None else []
    b = as_text(after).splitlines() if after is not None else []
    head = [f"--- remote/{path}", f"+++ desired/{path}"]
    found = list(difflib.unified_diff(a, b, head[0][4:], head[1][4:], lineterm="", n=2))
    if found or before is None or after is None:
        return found
    # Lines alike, text not: what differs is invisible in a line diff; an empty change says nothing.
    return [*head, f"  ({invisible_difference(as_text(before), as_text(after))})"]


def invisible_difference(before: str, after: str) -> str:
    """What differs between two texts whose lines are the same, in words."""

    def endings(text: str) -> str:
        crlf = text.count("\r\n")
        return "CRLF (Windows)" if crlf and crlf == text.count("\n") else "mixed" if crlf else "LF"

    if endings(before) != endings(after):
        return f"line endings only: the app's text has {endings(before)} line endings, the repo's {endings(after)}"
    if before.rstrip("\r\n") == after.rstrip("\r\n"):
        return "only the newline at the end differs"
    return "only line breaks differ (\\r, or a Unicode line separator)"


def where(plan: Plan) -> str:
    """Where the plan read the app: the endpoint, so a plan read from the wrong place says so at its top."""
    if not plan.endpoint:
        return ""  # a plan file from before endpoints were recorded
    return "the embedded emulator" if plan.endpoint == "embedded" else plan.endpoint


def unchanged(plan: Plan) -> str:
    """What a plan without changes means: a tear-down has nothing left to delete, and the app
    does not match the repo then (the repo still defines everything)."""
    if plan.destroy:
        whose = "Nothing it can delete" if plan.prune_unmanaged else "Nothing cesync owns"
        return f"No changes. {whose} is left in the app."
    return "No changes. The app matches the repo."


def notices(plan: Plan) -> list[str]:
    """What a reader must not miss before the changes: a partial plan, a plan apply will refuse."""
    out = []
    if plan.destroy:
        whose = "every resource it can delete" if plan.prune_unmanaged else "every resource cesync owns"
        out.append(f"Tear-down (--destroy): {whose} in the app is deleted; the app itself stays")
    if plan.commit:
        out.append(
            f"Promotion: the repo as at commit {plan.commit[:12]}, which '{plan.promoted_from}' last applied "
            "(not the working tree)"
        )
    if plan.targets:
        out.append(f"Partial plan: only {', '.join(plan.targets)} (--target); other resources were not compared")
    if plan.refused:
        out.append(f"Apply will refuse this plan: {plan.refused}")
    if plan.app_lock:
        out.append(f"App lock: {plan.app_lock}")
    if plan.denied:
        rules = sorted({f.rule for f in plan.denied})
        out.append(f"Policy: apply will refuse this plan: denied by {', '.join(rules)}")
    out += [f"Records: {note}" for note in plan.record_notes]
    return [*out, ""] if out else []


def policy_lines(plan: Plan) -> list[tuple[str, str, str, str]]:
    """(verdict, rule, subject, message) of each policy finding, denies first; every part is the
    repo's or a policy author's text, on one line with no markup (see _plain)."""
    ordered = sorted(plan.policy, key=lambda f: (f.verdict != "deny", f.rule, f.subject))
    return [(f.verdict, _plain(f.rule), _plain(f.subject), _plain(f.message, 500)) for f in ordered]


def validation_lines(found: dict[str, list[str]]) -> list[str]:
    """What CES reports wrong with the app's resources (App/Agent validationErrors, Example invalid)."""
    return [f"{name}: {problem}" for name, problems in sorted(found.items()) for problem in problems]


def summary(counts: dict[str, int]) -> str:
    return f"{counts['create']} to create, {counts['update']} to update, {counts['delete']} to delete"


def drift_label(c: Any) -> str:
    """What a change's drift says (the app differs from what cesync last applied), one line."""
    drift = c.drift or {}
    who = " by " + _plain(drift["by"]) if drift.get("by") else ""
    when = " at " + _plain(drift["at"]) if drift.get("at") else ""
    fields = ", ".join(_plain(f) for f in drift.get("fields", []))
    return f"drift: changed outside cesync since its last apply{who}{when}" + (f" ({fields})" if fields else "")


def _plain(value: Any, limit: int = 200) -> str:
    """A server's text on one line, no markup: a changelog author or time cannot end a block or fake a line."""
    text = "".join(ch if ch.isprintable() and ch not in "`<>|*_[]" else " " for ch in str(value))
    return text[:limit]


def unmanaged_groups(plan: Plan) -> list[tuple[str, list[str]]]:
    """The remote resources the repo does not define, by what would delete them: (why, names).

    Without prune, what cesync made is kept until --prune, and what it did not make until
    --prune-unmanaged: one hint for both would send the reader to a flag that deletes nothing.
    With no applied record every resource counts as cesync's (planbuild.build_plan)."""
    owned = set(plan.owned)

    def made(name: str) -> bool:
        return not plan.record or f"{kind_of_name(name).name}/{name.rsplit('/', 1)[-1]}" in owned

    theirs = sorted({ns for n, ns in plan.owners.items() if n in plan.unmanaged})
    ours = [n for n in plan.unmanaged if not plan.prune and made(n) and n not in plan.owners]
    others = [n for n in plan.unmanaged if n not in ours and n not in plan.owners]
    return [
        (why.format(them="it" if len(names) == 1 else "them"), names)
        for why, names in (
            ("kept; --prune deletes {them}", ours),
            ("kept: cesync did not make {them}; --prune-unmanaged deletes {them}", others),
            *(
                (
                    f"kept: another repo's ({_owner(ns)}); never pruned or adopted here",
                    [n for n in plan.unmanaged if plan.owners.get(n) == ns],
                )
                for ns in theirs
            ),
        )
        if names
    ]


def _owner(namespace: str) -> str:
    return f"owner {_plain(namespace)}" if namespace else "no owner named"


def touched(plan: Plan) -> str:
    """What uses the changed resources (plan.impact), by kind: ``1 app, 2 agents, 3 evaluations``;
    "" when nothing else is reached."""
    affected: dict[str, int] = {}
    for node in plan.impact.get("nodes", ()):
        if node.get("mark") == "affected":
            affected[node["kind"]] = affected.get(node["kind"], 0) + 1
    order = {name: i for i, name in enumerate(KINDS)}
    ordered = sorted(affected.items(), key=lambda item: order.get(item[0], len(order)))
    return ", ".join(KINDS[k].counted(n) if k in KINDS else count(n, k) for k, n in ordered)


IGNORED_HEAD = "Left to the console (ignoreChanges): the app's values stay, the repo's differ"


def ignored_lines(plan: Plan) -> list[tuple[str, list[str]]]:
    """(kind and id, the ignored paths where repo and app differ) per resource, in name order."""
    return [(kind_of_name(name).label(name.rsplit("/", 1)[-1]), paths) for name, paths in sorted(plan.ignored.items())]


def affected_lines(plan: Plan, name: Callable[[str], str]) -> list[str]:
    """What each changed resource puts at risk: "tool/x: evaluations a, b; tool tests f::t", every
    name (the repo's text) through name, the channel's escaper (escape.one_line, escape.md_code)."""
    lines = []
    for key, found in sorted(plan.affected.items()):
        parts = [
            f"{label} {', '.join(name(n) for n in found.get(field, []))}"
            for field, label in (("evaluations", "evaluations"), ("toolTests", "tool tests"))
            if found.get(field)
        ]
        lines.append(f"{name(key)}: {'; '.join(parts)}")
    return lines
