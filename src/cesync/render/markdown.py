"""The Markdown renderer for pull-request comments: a summary table, a section per resource."""

from __future__ import annotations

from ..plan import Plan
from .common import SYMBOL, VERB, as_text, is_multiline, summary, unified

MARKER = "<!-- cesync-plan:{env} -->"


def render_markdown(plan: Plan) -> str:
    counts = plan.counts()
    out = [MARKER.format(env=plan.environment), f"### cesync plan: `{plan.environment}`", "", f"App `{plan.app}`", ""]
    out += [
        "| create | update | delete | unmanaged |",
        "|---:|---:|---:|---:|",
        f"| {counts['create']} | {counts['update']} | {counts['delete']} | {len(plan.unmanaged)} |",
        "",
    ]
    if not plan.changes:
        out += ["**No changes.** The app matches the repo.", ""]
    for c in plan.changes:
        out += _section(c)
    if plan.unmanaged:
        out += ["<details><summary>Remote resources not in the repo (kept)</summary>", ""]
        out += [f"- `{n}`" for n in plan.unmanaged] + ["", "</details>", ""]
    out.append(f"**Plan:** {summary(counts)}. Digest `{plan.digest[:19]}`.")
    return "\n".join(out) + "\n"


def _section(c: object) -> list[str]:
    from ..plan import Change

    assert isinstance(c, Change)
    title = f"<code>{SYMBOL[c.action]} {c.kind} {c.id}</code> will be {VERB[c.action]}"
    lines = ["<details>", f"<summary>{title}</summary>", ""]
    if c.note:
        lines += [f"_{c.note}_", ""]
    if c.etag:
        lines += [f"etag `{c.etag}`" + (f", updateMask `{','.join(c.update_mask)}`" if c.update_mask else ""), ""]
    body: list[str] = []
    if c.action == "create" and c.after is not None:
        body = ["+ " + line for line in as_text(c.after).rstrip("\n").splitlines()]
    elif c.action == "delete" and c.before is not None:
        body = ["- " + line for line in as_text(c.before).rstrip("\n").splitlines()]
    for f in c.fields:
        if is_multiline(f.before, f.after):
            body += [f"~ {f.path}:", *unified(f.before, f.after, f.path)[2:]]
        else:
            body += [
                f"- {f.path}: {as_text(f.before).strip() if f.before is not None else '(unset)'}",
                f"+ {f.path}: {as_text(f.after).strip() if f.after is not None else '(unset)'}",
            ]
    lines += ["```diff", *body, "```", "", "</details>", ""]
    return lines
