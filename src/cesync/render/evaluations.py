"""Renderers of an evaluation Report: text for terminals, Markdown for the pull request, JUnit XML for CI."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ..core.evalreport import Finding, Outcome, Report
from ..escape import md_cell, md_code, xml_tree

__all__ = ["EVAL_MARKER", "render_eval", "render_eval_junit", "render_eval_markdown", "render_eval_text"]

EVAL_MARKER = "<!-- cesync-eval:{env}:{app} -->"  # beside the plan's comment, one per environment and app
MARK = {"passed": "PASS", "failed": "FAIL", "not evaluated": "NOT EVALUATED", "error": "ERROR"}
ICON = {"passed": "✅", "failed": "❌", "not evaluated": "⚪", "error": "⚠️"}


def _rate(o: Outcome) -> str:
    return f"{o.passed_runs}/{len(o.runs)} runs passed ({o.pass_rate:.0%})"


def _findings(o: Outcome) -> list[str]:
    """What each run missed, the same lines once with the runs that gave them."""
    seen: dict[str, list[int]] = {}
    for i, run in enumerate(o.runs, 1):
        lines = [run.error] if run.error else [f.describe() for f in (*run.misses, *_only(run.unjudged, run.status))]
        for line in lines:
            seen.setdefault(line, []).append(i)
    many = len(o.runs) > 1
    return [line + (f" (run {', '.join(map(str, runs))})" if many else "") for line, runs in seen.items()]


def _only(unjudged: tuple[Finding, ...], status: str) -> tuple[Finding, ...]:
    return unjudged if status != "passed" else ()


def _summary(report: Report) -> str:
    c = report.counts()
    n = len(report.outcomes)
    parts = [f"{c['passed']} passed", f"{c['failed']} failed"]
    parts += [f"{c[s]} {s}" for s in ("not evaluated", "error") if c[s]]
    return f"{n} evaluation{'' if n == 1 else 's'}: " + ", ".join(parts)


def render_eval_text(report: Report) -> str:
    lines = [f"Evaluations of {report.app} ('{report.environment}'), run {report.run.rsplit('/', 1)[-1]}:", ""]
    for o in report.outcomes:
        rate = f", {_rate(o)}" if report.run_count > 1 else ""
        lines.append(f"{MARK[o.status]}  {o.id}" + (f" ({o.display_name})" if o.display_name != o.id else "") + rate)
        lines += [f"      {line}" for line in _findings(o)]
    lines += ["", _summary(report) + _gate(report)]
    return "\n".join(lines) + "\n"


def _gate(report: Report) -> str:
    rate = f"; an evaluation passes at {report.min_pass_rate:.0%} of its runs" if report.run_count > 1 else ""
    return f" (thresholds: {report.thresholds_from}{rate})"


def render_eval_markdown(report: Report) -> str:
    """The sticky comment's body: its marker first, a summary, a row per evaluation."""
    lines = [
        EVAL_MARKER.format(env=report.environment, app=report.app),
        f"### cesync eval: `{report.environment}`",
        "",
        f"App `{report.app}`, run {md_code(report.run.rsplit('/', 1)[-1])}",
        "",
        f"**{'All evaluations passed.' if report.passed else 'Evaluations did not pass.'}** {_summary(report)}{_gate(report)}",
        "",
        "| | evaluation | runs passed | what missed |",
        "|---|---|---:|---|",
    ]
    for o in report.outcomes:
        missed = "<br>".join(md_cell(line) for line in _findings(o)) or "-"  # a tool's answer is code, never Markdown
        lines.append(
            f"| {ICON[o.status]} | {md_cell(o.id)} {md_cell(o.display_name) if o.display_name != o.id else ''} "
            f"| {o.passed_runs}/{len(o.runs)} | {missed} |"
        )
    return "\n".join(lines) + "\n"


def render_eval_junit(report: Report) -> str:
    """One testsuite for the run, one testcase per evaluation (its runs in the failure text)."""
    c = report.counts()
    root = ET.Element("testsuites", name=f"cesync eval {report.environment}")
    suite = ET.SubElement(
        root,
        "testsuite",
        name=f"evaluations of {report.app}",
        tests=str(len(report.outcomes)),
        failures=str(c["failed"] + c["not evaluated"]),
        errors=str(c["error"]),
    )
    ET.SubElement(ET.SubElement(suite, "properties"), "property", name="evaluationRun", value=report.run)
    for o in report.outcomes:
        case = ET.SubElement(suite, "testcase", name=o.display_name, classname=f"evaluations.{o.id}")
        if o.status == "passed":
            continue
        findings = _findings(o)
        tag = "error" if o.status == "error" else "failure"
        message = f"{o.status}: {findings[0] if findings else _rate(o)}"
        ET.SubElement(case, tag, message=message, type=o.status).text = "\n".join([_rate(o), *findings])
    ET.indent(xml_tree(root))  # a name or an answer with a control character XML cannot hold
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def render_eval(report: Report, fmt: str) -> str:
    if fmt == "json":
        return report.to_json()
    if fmt == "markdown":
        return render_eval_markdown(report)
    return render_eval_text(report)
