"""The Markdown renderer for pull-request comments: a summary table, a section per resource.

Text from the app (names, etags, notes, validationErrors, values) is only ever code here, in
spans or fences it cannot close (escape.md_code, md_fence): never Markdown, HTML or a mention.
"""

from __future__ import annotations

import html

from ..api.words import count
from ..core.graph import graph_of
from ..core.plan import RESENT, Plan
from ..core.sensitive import CHANGED
from ..escape import md_code, md_fence
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
    where,
)
from .graph import to_mermaid

MARKER = "<!-- cesync-plan:{env}:{app} -->"
GITHUB_COMMENT_LIMIT = 65_536


def render_markdown(plan: Plan, *, max_chars: int | None = None, full_plan: str = "the job's artifacts") -> str:
    """The comment; with max_chars, whole resource sections are left out from the end to fit.

    full_plan says where the reader finds what was left out (a link or a phrase).
    """
    counts = plan.counts()
    head = [
        MARKER.format(env=plan.environment, app=plan.app),
        f"### cesync plan: `{plan.environment}`",
        "",
        f"App `{plan.app}`" + (f" at {_endpoint(plan)}" if where(plan) else ""),
        "",
    ]
    head += [_notice(line) for line in notices(plan) if line]
    head += [""] if notices(plan) else []
    head += [
        "| create | update | delete | unmanaged |",
        "|---:|---:|---:|---:|",
        f"| {counts['create']} | {counts['update']} | {counts['delete']} | {len(plan.unmanaged)} |",
        "",
    ]
    if not plan.changes:
        head += [f"**No changes.** {unchanged(plan).removeprefix('No changes. ')}", ""]
    head += _impact(plan)
    if plan.affected:
        head += ["**At risk** (evaluations and tool tests that exercise a changed resource):", ""]
        head += [f"- {line}" for line in affected_lines(plan, md_code)]
        head.append("")
    if plan.policy:
        head += ["**Policy checks:**", ""]
        # a message may be made from change.before, the app's copy a console user writes: code
        head += [
            f"- **{verdict}** {md_code(rule)} on {md_code(subject)}: {md_code(message)}"
            for verdict, rule, subject, message in policy_lines(plan)
        ]
        head.append("")
    tail: list[str] = []
    if plan.validation:
        tail += ["**CES reports problems in the app as it is** (validationErrors, invalid):", ""]
        tail += [
            f"- {md_code(name)}: {md_code(problem)}" for name, problems in sorted(plan.validation.items()) for problem in problems
        ]
        tail.append("")
    if plan.ignored:
        tail += [f"**{IGNORED_HEAD}:**", ""]
        tail += [f"- `{label}`: {', '.join(f'`{p}`' for p in paths)}" for label, paths in ignored_lines(plan)]
        tail.append("")
    for why, names in unmanaged_groups(plan):
        tail += [f"<details><summary>{count(len(names), 'remote resource')} not in the repo ({why})</summary>", ""]
        tail += [f"- {md_code(n)}" for n in names] + ["", "</details>", ""]
    tail.append(f"**Plan:** {summary(counts)}. Digest `{plan.digest[:19]}`.")
    sections = ["\n".join(_section(c)) + "\n" for c in plan.changes]
    text = _join(head, sections, tail)
    if max_chars is None or len(text) <= max_chars:
        return text
    shown: list[str] = []
    for i, section in enumerate(sections):
        note = _cut_note(len(sections) - i - 1, len(sections), full_plan)
        if len(_join(head, [*shown, section], [note, *tail])) > max_chars:
            break
        shown.append(section)
    cut = _join(head, shown, [_cut_note(len(sections) - len(shown), len(sections), full_plan), *tail])
    return cut if len(cut) <= max_chars else cut[: max_chars - 1] + "\n"  # only if the header alone is too long


IMPACT_OPEN = 12  # a picture of more resources than this is folded
IMPACT_LIMIT = 40  # ... and one of more is cut, with "and N more"


def _impact(plan: Plan) -> list[str]:
    """What the plan touches, as a Mermaid picture (GitHub and GitLab draw it): changes coloured
    by action, what uses them dashed. Labels are escaped by render.graph: no text of the app can
    close the fence."""
    graph, marks = graph_of(plan.impact)
    if not graph.nodes:
        return []
    reached = touched(plan)
    said = f"{count(len(plan.changes), 'change')}" + (f"; through references they touch {reached}" if reached else "")
    opened = " open" if len(graph.nodes) <= IMPACT_OPEN else ""
    picture = to_mermaid(graph, marks=marks, limit=IMPACT_LIMIT).rstrip("\n").split("\n")
    return [
        f"<details{opened}><summary>What this plan touches: {said}</summary>",
        "",
        "```mermaid",
        *picture,
        "```",
        "",
        "</details>",
        "",
    ]


def _notice(line: str) -> str:
    """A notice as a quote; a record's (it names a version as the server gave it) as code."""
    what, said = line.split(": ", 1)
    return f"> **{what}:** {md_code(said) if what == 'Records' else said}"


def _join(head: list[str], sections: list[str], tail: list[str]) -> str:
    return "\n".join(head) + "\n" + "".join(sections) + "\n".join(tail) + "\n"


def _cut_note(left_out: int, total: int, full_plan: str) -> str:
    return f"> **Cut to fit a comment:** {left_out} of {total} resources are not shown here. The full plan is in {full_plan}.\n"


def _section(c: object) -> list[str]:
    from ..core.plan import Change

    assert isinstance(c, Change)
    title = f"<code>{html.escape(f'{SYMBOL[c.action]} {c.kind} {c.id}')}</code> will be {VERB[c.action]}"
    if c.drift is not None:
        title += " (**drift**)"
    lines = ["<details>", f"<summary>{title}</summary>", ""]
    if c.drift is not None:
        said, what = drift_label(c).split(": ", 1)  # what: who and when, as the app's changelog says
        lines += [f"> **{said}:** {md_code(what)}", ""]
    if c.note:
        lines += [f"Note: {md_code(c.note)}", ""]
    if c.etag:
        lines += [f"etag {md_code(c.etag)}" + (f", updateMask {md_code(','.join(c.update_mask))}" if c.update_mask else ""), ""]
    body: list[str] = []
    if c.action == "create" and c.after is not None:
        body = ["+ " + line for line in as_text(c.after).rstrip("\n").splitlines()]
    elif c.action == "delete" and c.before is not None:
        body = ["- " + line for line in as_text(c.before).rstrip("\n").splitlines()]
    for f in c.fields:
        if f.after in (CHANGED, RESENT):
            body.append(f"~ {f.path}: {f.after}")
        elif is_multiline(f.before, f.after):
            body += [f"~ {f.path}:", *unified(f.before, f.after, f.path)[2:]]
        else:
            body += [
                f"- {f.path}: {as_text(f.before).strip() if f.before is not None else '(unset)'}",
                f"+ {f.path}: {as_text(f.after).strip() if f.after is not None else '(unset)'}",
            ]
    # A fence no line of body can close: a prompt with ``` in it, quoted in the diff, would
    # otherwise end the block and turn the rest of the plan into Markdown and HTML its author chose.
    lines += [*md_fence(body, "diff"), "", "</details>", ""]
    return lines


def _endpoint(plan: Plan) -> str:
    """A URL as code; 'the embedded emulator' is words, not a value to copy."""
    said = where(plan)
    return said if plan.endpoint == "embedded" else f"`{said}`"
