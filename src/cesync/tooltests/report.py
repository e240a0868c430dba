"""Reporting results (pure): text, JSON and JUnit XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from ..escape import xml_tree
from .run import Result

__all__ = ["junit_xml", "report", "results_json"]


def report(results: list[Result]) -> str:
    lines = []
    for r in results:
        mark = {"passed": "PASS", "failed": "FAIL", "error": "ERROR"}[r.status]
        lines.append(f"{mark}  {r.case.id}  ({r.case.tool}, {r.seconds * 1000:.0f} ms)")
        lines += [f"      {m}" for m in r.messages]
    counts = {s: sum(1 for r in results if r.status == s) for s in ("passed", "failed", "error")}
    lines.append("")
    n, errors = len(results), counts["error"]
    lines.append(
        f"{n} test{'' if n == 1 else 's'}: {counts['passed']} passed, {counts['failed']} failed, "
        f"{errors} error{'' if errors == 1 else 's'}"
    )
    return "\n".join(lines) + "\n"


def results_json(results: list[Result]) -> dict[str, Any]:
    """--format json: counts and one entry per test, with the answer the tool gave."""
    counts = {s: sum(1 for r in results if r.status == s) for s in ("passed", "failed", "error")}
    return {
        "counts": counts,
        "tests": [
            {
                "file": r.case.file,
                "line": r.case.line,
                "name": r.case.name,
                "tool": r.case.tool,
                "format": r.case.style,
                "status": r.status,
                "messages": list(r.messages),
                "seconds": round(r.seconds, 4),
                "answer": r.answer,
            }
            for r in results
        ],
    }


def junit_xml(results: list[Result], suite: str = "cesync") -> str:
    """JUnit XML as CI systems read it: one testsuite per test file."""
    root = ET.Element("testsuites", name=suite)
    by_file: dict[str, list[Result]] = {}
    for r in results:
        by_file.setdefault(r.case.file, []).append(r)
    for file, items in by_file.items():
        node = ET.SubElement(
            root,
            "testsuite",
            name=file,
            tests=str(len(items)),
            failures=str(sum(r.status == "failed" for r in items)),
            errors=str(sum(r.status == "error" for r in items)),
            time=f"{sum(r.seconds for r in items):.3f}",
        )
        for r in items:
            case = ET.SubElement(
                node, "testcase", name=r.case.name, classname=file.removesuffix(".yaml"), time=f"{r.seconds:.3f}", file=file
            )
            case.set("line", str(r.case.line))
            if r.status != "passed":
                tag = "failure" if r.status == "failed" else "error"
                ET.SubElement(case, tag, message=r.messages[0] if r.messages else r.status).text = "\n".join(r.messages)
    ET.indent(xml_tree(root))  # a test's name or a tool's answer with a control character XML cannot hold (\x1b)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
