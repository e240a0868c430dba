"""Policy checks: the repo's own rules, in CEL, run on the desired state and on a plan (pure).

A policy file holds rules, each a CEL expression that is true when something is wrong (as a
Conftest ``deny``/``warn`` rule yields a message), and tests of those rules:

    rules:
      - name: prod-tool-timeout
        on: resource            # each resource the repo renders (validate, plan) | change: each planned change
        deny: env == "prod" && kind == "tool" && has(resource.timeout) && duration(resource.timeout) > duration("30s")
        messageExpression: '"timeout " + resource.timeout + " is over 30s"'
    tests:
      - name: a slow prod tool is denied
        env: prod
        resource: {kind: tool, id: slow, body: {timeout: 45s}}
        expect: [prod-tool-timeout]

The engine is Google's CEL runtime (``cel-expr-python``, the C++ implementation Google's own
services evaluate custom organization policies and IAM conditions with). The embeddable Rego
engine on the package index (``regopy`` 1.3-1.5) crashed the process (SIGSEGV) on
``with input as`` over a builtin call, the construct every OPA policy test uses, so it cannot
carry ``cesync policy test``; see docs/policies.md.

What a rule sees (each a CEL variable, the values JSON as CES sends it):

    on: resource   env, labels, kind, id, resource (its body), resources (every rendered resource: kind, id, body)
    on: change     env, labels, change (action, kind, id, name, before, after, fields, updateMask),
                   plan (environment, app, counts, changes), served (agent names the deployments reach)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..api.kinds import KINDS
from ..api.resource import Resource
from ..errors import CesyncError
from .graph import build_graph

__all__ = [
    "SCOPES",
    "CompiledRule",
    "Finding",
    "PolicyError",
    "PolicyFile",
    "PolicyRule",
    "PolicyTest",
    "TestResult",
    "change_input",
    "compile_rules",
    "denies",
    "evaluate_changes",
    "evaluate_resources",
    "run_tests",
    "served_agents",
]

Scope = Literal["resource", "change"]
Verdict = Literal["deny", "warn"]
SCOPES: dict[str, tuple[str, ...]] = {
    "resource": ("env", "labels", "kind", "id", "resource", "resources"),
    "change": ("env", "labels", "change", "plan", "served"),
}
RULE_NAME = r"[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?"
MAX_MESSAGE = 500  # a message is the policy author's text, shown in a PR comment: bounded


class PolicyError(CesyncError):
    """A policy that cannot be compiled or evaluated (the rule, the file, what the engine said)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class PolicyRule(_Strict):
    name: str = Field(description="Unique among all policy files; shown with every finding.")
    on: Scope = Field(
        "resource", description="resource: each rendered resource (validate and plan); change: each planned change."
    )
    deny: str | None = Field(None, description="CEL: true stops apply.")
    warn: str | None = Field(None, description="CEL: true is shown, nothing stops.")
    message: str | None = Field(None, description="What to tell the reader (plain text).")
    messageExpression: str | None = Field(None, description="CEL giving the message as a string (wins over message).")

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if not re.fullmatch(RULE_NAME, name):
            raise ValueError(f"rule name {name[:80]!r}: use lowercase letters, digits and '-' (at most 64)")
        return name

    @model_validator(mode="after")
    def _one_verdict(self) -> PolicyRule:
        if (self.deny is None) == (self.warn is None):
            raise ValueError(f"rule {self.name!r}: give exactly one of deny or warn (a CEL expression)")
        return self

    @property
    def verdict(self) -> Verdict:
        return "deny" if self.deny is not None else "warn"

    @property
    def expression(self) -> str:
        return self.deny if self.deny is not None else str(self.warn)


class PolicyTest(_Strict):
    name: str = Field(min_length=1)
    env: str = "prod"
    labels: list[str] = Field(default_factory=list)
    resource: dict[str, Any] | None = Field(None, description="{kind, id, body}: a rendered resource (rules on: resource).")
    resources: list[dict[str, Any]] = Field(default_factory=list, description="The rest of the app the resource sits in.")
    change: dict[str, Any] | None = Field(None, description="A planned change as the plan's JSON holds it (rules on: change).")
    served: list[str] = Field(default_factory=list)
    expect: list[str] = Field(description="The names of the rules that must fire, and no others.")

    @model_validator(mode="after")
    def _one_subject(self) -> PolicyTest:
        if (self.resource is None) == (self.change is None):
            raise ValueError(f"test {self.name!r}: give exactly one of resource or change")
        return self


class PolicyFile(_Strict):
    rules: list[PolicyRule] = Field(default_factory=list)
    tests: list[PolicyTest] = Field(default_factory=list)


@dataclass(frozen=True)
class Finding:
    rule: str
    verdict: Verdict
    subject: str  # kind/id of the resource or change
    message: str
    source: str = ""  # the policy file

    def public(self) -> dict[str, str]:
        return {
            "rule": self.rule,
            "verdict": self.verdict,
            "subject": self.subject,
            "message": self.message,
            "source": self.source,
        }


@dataclass(frozen=True)
class CompiledRule:
    rule: PolicyRule
    source: str
    check: Any  # cel Expression
    message: Any | None  # cel Expression or None


@dataclass(frozen=True)
class TestResult:
    source: str
    name: str
    ok: bool
    detail: str = ""


def _cel() -> Any:
    try:
        from cel_expr_python import cel  # type: ignore[import-untyped,unused-ignore]  # ships cel.pyi, no py.typed
    except ImportError:  # the package's marker: Python 3.10 has no wheel of Google's CEL runtime
        raise PolicyError(
            "policy checks need Google's CEL runtime (the cel-expr-python package, Python 3.11 or later): "
            "pip install cel-expr-python, or remove 'policies' from cesync.yaml"
        ) from None
    return cel


def _env(scope: str) -> Any:
    cel = _cel()
    return cel.NewEnv(variables={name: cel.Type.DYN for name in SCOPES[scope]})


def compile_rules(files: Iterable[tuple[str, PolicyFile]]) -> list[CompiledRule]:
    """Every rule of every file, compiled; a duplicate name or an expression CEL rejects is a PolicyError."""
    envs: dict[str, Any] = {}
    compiled: list[CompiledRule] = []
    seen: dict[str, str] = {}
    for source, policy in files:
        for rule in policy.rules:
            if rule.name in seen:
                raise PolicyError(f"{source}: rule {rule.name!r} is also defined in {seen[rule.name]}; rule names are unique")
            seen[rule.name] = source
            env = envs.setdefault(rule.on, _env(rule.on))
            check = _compile(env, rule.expression, source, rule.name, rule.verdict)
            message = (
                _compile(env, rule.messageExpression, source, rule.name, "messageExpression") if rule.messageExpression else None
            )
            compiled.append(CompiledRule(rule, source, check, message))
    return compiled


def _compile(env: Any, text: str, source: str, rule: str, what: str) -> Any:
    try:
        return env.compile(text)
    except RuntimeError as exc:
        raise PolicyError(f"{source}: rule {rule!r}: its {what} is not valid CEL: {_engine_text(exc)}") from None


def _engine_text(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:400]


def _run(rule: CompiledRule, data: Mapping[str, Any], subject: str) -> Finding | None:
    cel = _cel()
    result = rule.check.eval(data=data)
    if result.type() == cel.Type.ERROR:
        said = _engine_text(Exception(result.value()))
        raise PolicyError(
            f"{rule.source}: rule {rule.rule.name!r} could not be evaluated on {subject}: {said} "
            "(guard optional fields with has(), e.g. has(resource.timeout) && ...)"
        )
    value = result.value()
    if not isinstance(value, bool):
        raise PolicyError(f"{rule.source}: rule {rule.rule.name!r} gave {type(value).__name__}, not true or false, on {subject}")
    if not value:
        return None
    return Finding(rule.rule.name, rule.rule.verdict, subject, _message(rule, data, subject), rule.source)


def _message(rule: CompiledRule, data: Mapping[str, Any], subject: str) -> str:
    text = rule.rule.message or rule.rule.name
    if rule.message is not None:
        result = rule.message.eval(data=data)
        value = result.value()
        if result.type() == _cel().Type.ERROR or not isinstance(value, str):
            raise PolicyError(f"{rule.source}: rule {rule.rule.name!r}: its messageExpression gave no text on {subject}")
        text = value
    return " ".join(text.split())[:MAX_MESSAGE]


def _plain(value: Any) -> Any:
    """JSON as CEL takes it: tuples as lists (a plan's data is frozen)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def evaluate_resources(
    rules: Sequence[CompiledRule], env: str, resources: Sequence[tuple[str, str, dict[str, Any]]], labels: Sequence[str] = ()
) -> list[Finding]:
    """The rules on: resource, on each (kind, id, body) the repo renders for env."""
    chosen = [r for r in rules if r.rule.on == "resource"]
    if not chosen:
        return []
    everything = [{"kind": k, "id": i, "body": _plain(b)} for k, i, b in resources]
    found: list[Finding] = []
    for item in everything:
        data = {
            "env": env,
            "labels": list(labels),
            "kind": item["kind"],
            "id": item["id"],
            "resource": item["body"],
            "resources": everything,
        }
        subject = f"{item['kind']}/{item['id']}"
        found += [f for r in chosen if (f := _run(r, data, subject)) is not None]
    return found


def change_input(change: Mapping[str, Any]) -> dict[str, Any]:
    """What a rule sees of one change of the plan's JSON (Plan.public()['changes'][i])."""
    data: dict[str, Any] = _plain(
        {
            "action": change.get("action", ""),
            "kind": change.get("kind", ""),
            "id": change.get("id", ""),
            "name": change.get("name", ""),
            "before": change.get("before"),
            "after": change.get("after"),
            "fields": [f.get("path", "") for f in change.get("fields", []) if isinstance(f, dict)],
            "updateMask": list(change.get("update_mask", [])),
        }
    )
    return data


def evaluate_changes(
    rules: Sequence[CompiledRule],
    plan: Mapping[str, Any],
    labels: Sequence[str] = (),
    served: Sequence[str] = (),
) -> list[Finding]:
    """The rules on: change, on each change of a plan's JSON form (Plan.public())."""
    chosen = [r for r in rules if r.rule.on == "change"]
    if not chosen:
        return []
    changes = [change_input(c) for c in plan.get("changes", [])]
    counts = {a: sum(1 for c in changes if c["action"] == a) for a in ("create", "update", "delete")}
    whole = {"environment": plan.get("environment", ""), "app": plan.get("app", ""), "counts": counts, "changes": changes}
    found: list[Finding] = []
    for change in changes:
        data = {"env": whole["environment"], "labels": list(labels), "change": change, "plan": whole, "served": list(served)}
        subject = f"{change['kind']}/{change['id']}"
        found += [f for r in chosen if (f := _run(r, data, subject)) is not None]
    return found


def denies(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.verdict == "deny"]


def run_tests(rules: Sequence[CompiledRule], files: Iterable[tuple[str, PolicyFile]]) -> list[TestResult]:
    """Each test of each file: the rules that fire on its input must be exactly those it expects."""
    known = {r.rule.name for r in rules}
    results: list[TestResult] = []
    for source, policy in files:
        for test in policy.tests:
            unknown = sorted(set(test.expect) - known)
            if unknown:
                results.append(TestResult(source, test.name, False, f"expects rules no policy defines: {', '.join(unknown)}"))
                continue
            try:
                fired = _fired(rules, test)
            except PolicyError as exc:
                results.append(TestResult(source, test.name, False, exc.args[0]))
                continue
            want = sorted(set(test.expect))
            ok = fired == want
            detail = "" if ok else f"expected {', '.join(want) or 'no rule'}; fired {', '.join(fired) or 'no rule'}"
            results.append(TestResult(source, test.name, ok, detail))
    return results


def _fired(rules: Sequence[CompiledRule], test: PolicyTest) -> list[str]:
    if test.resource is not None:
        subject = test.resource
        rest = [(str(r.get("kind", "")), str(r.get("id", "")), dict(r.get("body") or {})) for r in test.resources]
        own = (str(subject.get("kind", "")), str(subject.get("id", "")), dict(subject.get("body") or {}))
        findings = [
            f for f in evaluate_resources(rules, test.env, [own, *rest], test.labels) if f.subject == f"{own[0]}/{own[1]}"
        ]
    else:
        assert test.change is not None
        plan = {"environment": test.env, "app": "", "changes": [test.change]}
        findings = evaluate_changes(rules, plan, test.labels, test.served)
    return sorted({f.rule for f in findings})


def served_agents(remote: Iterable[Resource], parent: str) -> list[str]:
    """The agents an app's deployments reach: with any deployment (a kind that serves), every agent
    the app reaches through its references (core.graph): its root agent, and child agents, transfer
    rules, agent tools and guardrails' transfers from there."""
    present = list(remote)
    app = next((r.key for r in present if r.kind.singleton), None)
    if app is None or not any(r.kind.serves for r in present):
        return []
    reached = build_graph(present, parent).dependencies([app])
    return sorted(
        kind.resource_name(parent, rid) for name, rid in reached if (kind := KINDS.get(name)) is not None and kind.converses
    )
