"""A release (pipeline.release.ReleaseResult as data) for people: its events as lines, and as Markdown (pure).

Every version and deployment name is the app's text: shown without markup (render.common), and
in Markdown only inside code (escape.md_code), where a mention or a link of a server's is text."""

from __future__ import annotations

from typing import Any

from ..escape import md_cell, md_code
from .common import _plain

__all__ = ["event_line", "render_release_markdown", "render_release_text", "schedule_lines"]


def _short(name: Any) -> str:
    return _plain(str(name).rsplit("/", 1)[-1], 128)


def _shares(traffic: dict[str, Any]) -> str:
    return ", ".join(f"{_short(v)} {t['before']}% -> {t['after']}%" for v, t in traffic.items())


def schedule_lines(schedule: list[dict[str, Any]]) -> list[str]:
    """Each step as a plan: what traffic moves where, how long it holds, then the gate."""
    lines = []
    for s in schedule:
        hold = f", hold {s['holdSeconds']:g}s" if s["holdSeconds"] else ""
        there = " (the deployment is on this step: resumed)" if s["alreadyThere"] else ""
        lines.append(f"step {s['step']}/{s['of']}: {_shares(s['traffic'])}{hold}, then the gate{there}")
    return lines


def event_line(event: dict[str, Any]) -> str:
    kind = event["event"]
    if kind == "gate":
        counts = event.get("counts") or {}
        said = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
        verdict = "passed" if event["passed"] else "FAILED"
        step = f"step {event['step']}: " if "step" in event else "before any traffic moves: "
        return f"gate {step}{verdict} against {_short(event['against'])}" + (f" ({said})" if said else "")
    if kind == "step":
        return f"moved: step {event['step']}/{event['of']}: {_shares(event['traffic'])}"
    if kind == "hold":
        return f"holding step {event['step']} for {event['seconds']:g}s"
    if kind == "resume":
        return f"resumed: the deployment is on step {event['step']} ({event['share']}% to the new version)"
    if kind == "rollback":
        return f"rolled back: {_short(event['serving'])} serves all traffic again"
    if kind == "done":
        return f"done: {_short(event['serving'])} serves all traffic" if "serving" in event else _plain(event.get("message", ""))
    return _plain(kind)


def render_release_text(data: dict[str, Any], *, events: bool = True) -> str:
    head = [f"Release of {_short(data['target'])} to deployment {_short(data['deployment'])} ('{data['environment']}')"]
    if data.get("previous"):
        head.append(f"serving before: {_short(data['previous'])}")
    lines = [*head, *schedule_lines(data["schedule"])]
    if events:
        lines += [event_line(e) for e in data["events"]]
    lines.append(f"Release: {data['outcome']}.")
    return "\n".join(lines) + "\n"


def render_release_markdown(data: dict[str, Any]) -> str:
    ok = "released" if data["outcome"] == "released" else data["outcome"]
    lines = [
        f"### cesync release: `{_short(data['deployment'])}` in `{data['environment']}`",
        "",
        f"**{ok}**: `{_short(data['target'])}`" + (f" (before: `{_short(data['previous'])}`)" if data.get("previous") else ""),
        "",
        "| step | traffic | hold |",
        "|---:|---|---:|",
    ]
    lines += [f"| {s['step']}/{s['of']} | {md_cell(_shares(s['traffic']))} | {s['holdSeconds']:g}s |" for s in data["schedule"]]
    if data["events"]:
        lines += ["", "<details><summary>What happened</summary>", ""]
        lines += [f"- {md_code(event_line(e))}" for e in data["events"]]
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"
