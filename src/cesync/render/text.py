"""The human renderer: coloured + ~ -, field-level before -> after, unified diffs."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..api.words import count
from ..core.plan import RESENT, Change, Plan
from ..core.scrubber import clip
from ..core.sensitive import CHANGED
from ..escape import one_line, terminal
from .common import (
    IGNORED_HEAD,
    SYMBOL,
    VERB,
    affected_lines,
    as_text,
    drift_label,
    ignored_lines,
    is_multiline,
    notices,
    policy_lines,
    summary,
    touched,
    unchanged,
    unified,
    unmanaged_groups,
    validation_lines,
    where,
)

COLORS = {"create": "\x1b[32m", "update": "\x1b[33m", "delete": "\x1b[31m", "dim": "\x1b[2m", "bold": "\x1b[1m"}
RESET = "\x1b[0m"


def use_color(stream_is_tty: bool, environ: Mapping[str, str]) -> bool:
    """Colors on a terminal, unless the environment says NO_COLOR or TERM=dumb (environ: the process's)."""
    return stream_is_tty and not environ.get("NO_COLOR") and environ.get("TERM") != "dumb"


def _short(value: Any) -> str:
    return clip(json.dumps(value), 120)


def render_text(plan: Plan, *, color: bool = False) -> str:
    # The app's text is escaped before it is coloured: the only escape sequences left are these
    # colours, which cli.out's last pass (escape.output) keeps, and nothing the app wrote.
    def paint(text: str, key: str) -> str:
        return f"{COLORS[key]}{terminal(text)}{RESET}" if color else terminal(text)

    def texts(changes: list[Change]) -> list[str]:
        return ["\n".join(_change(c, paint)) for c in changes]

    at = f" at {where(plan)}" if where(plan) else ""
    lines = [f"Plan for environment '{plan.environment}' ({plan.app}){at}", ""]
    lines += [paint(line, "bold") for line in notices(plan)]
    lines += texts(list(plan.changes))
    if not plan.changes:
        lines.append(unchanged(plan))
        lines.append("")
    for why, names in unmanaged_groups(plan):
        lines.append(paint(f"{count(len(names), 'remote resource')} not in the repo ({why}):", "dim"))
        lines += [paint(f"  ? {name}", "dim") for name in names]
        lines.append("")
    if plan.ignored:
        lines.append(paint(f"{IGNORED_HEAD}:", "dim"))
        lines += [paint(f"  = {label}: {', '.join(paths)}", "dim") for label, paths in ignored_lines(plan)]
        lines.append("")
    if plan.affected:
        lines.append(paint("Evaluations and tool tests the changes put at risk (eval --affected-by PLANFILE runs them):", "bold"))
        lines += [f"  {line}" for line in affected_lines(plan, one_line)]
        lines.append("")
    if plan.policy:
        lines.append(paint("Policy checks:", "bold"))
        lines += [f"  {verdict.upper()} {rule}: {subject}: {message}" for verdict, rule, subject, message in policy_lines(plan)]
        lines.append("")
    if plan.validation:
        lines.append(paint("CES reports problems in the app as it is (validationErrors, invalid):", "bold"))
        lines += [f"  ! {terminal(line)}" for line in validation_lines(plan.validation)]
        lines.append("")
    if plan.unknown_fields:
        lines.append(paint("Remote fields cesync does not model (never compared, kept on update):", "dim"))
        lines += [paint(f"  {name}: {', '.join(fields)}", "dim") for name, fields in sorted(plan.unknown_fields.items())]
        lines.append("")
    reached = touched(plan)
    if reached:
        lines.append(paint(f"Touches, through references: {reached} (cesync graph draws them).", "dim"))
        lines.append("")
    lines.append(paint(f"Plan: {summary(plan.counts())}.", "bold"))
    return "\n".join(lines) + "\n"


def _change(c: Change, paint: Any) -> list[str]:
    head = f"{SYMBOL[c.action]} {c.kind.label(c.id)} will be {VERB[c.action]}"
    if c.etag:
        head += f" (etag {c.etag})"
    out = [paint(head, c.action)]
    if c.drift is not None:
        out.append(paint(f"    ! {drift_label(c)}", "bold"))
    if c.note:
        out.append(paint(f"    # {c.note}", "dim"))
    if c.action == "create" and c.after is not None:
        out += [f"    + {terminal(line)}" for line in as_text(c.after).rstrip("\n").splitlines()]
    for f in c.fields:
        if f.after in (CHANGED, RESENT):
            out.append(f"    ~ {f.path}: {f.after}")
        elif is_multiline(f.before, f.after):
            out.append(f"    ~ {f.path}:")
            for line in unified(f.before, f.after, f.path)[2:]:
                key = "create" if line.startswith("+") else "delete" if line.startswith("-") else "dim"
                out.append("        " + paint(line, key))
        else:
            out.append(
                f"    ~ {f.path}: {_short(f.before) if f.before is not None else '(unset)'} -> "
                f"{_short(f.after) if f.after is not None else '(unset)'}"
            )
    if c.update_mask:
        out.append(paint(f"    updateMask: {','.join(c.update_mask)}", "dim"))
    out.append("")
    return out
