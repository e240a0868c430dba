"""The custom roles docs/ci-cd.md tells people to create hold what cesync calls, named as cesync names them.

The names come from :func:`cesync.api.permissions.permission`, the same function that names a
refused permission in a PERMISSION_DENIED message; the kinds from the registry, so a new v1
kind that the roles lack fails here.
"""

from __future__ import annotations

import re

from cesync.api.kinds import KINDS
from cesync.api.permissions import permission
from tests.docs.pages import DOCS

APP = "projects/p/locations/l/apps/a"
V1 = [k for k in KINDS.values() if k.api_version == "v1"]


def _role(name: str) -> set[str]:
    text = (DOCS / "ci-cd.md").read_text(encoding="utf-8")
    found = re.search(rf"gcloud iam roles create {name} .*?--permissions=(\S+)", text, re.DOTALL)
    assert found, f"docs/ci-cd.md creates no role {name}"
    return set(found.group(1).split(","))


def _collection(kind: str) -> str:
    return "projects/p/locations/l/apps" if kind == "apps" else f"{APP}/{kind}"


def _one(kind: str) -> str:
    return APP if kind == "apps" else f"{APP}/{kind}/x"


def test_the_planner_reads_everything_plan_reads_and_writes_nothing() -> None:
    planner = _role("cesyncPlanner")
    reads = {permission("GET", _collection(k.collection)) for k in V1} | {permission("GET", _one(k.collection)) for k in V1}
    reads |= {permission("GET", f"{APP}/versions"), permission("GET", f"{APP}/changelogs")}
    assert reads - planner == set(), f"the planner role lacks {sorted(reads - planner)}"
    writes = {p for p in planner if p.rsplit(".", 1)[1] not in ("list", "get")}
    assert not writes, f"the planner role can write: {sorted(writes)}"


def test_the_deployer_can_do_everything_apply_rollback_and_test_do() -> None:
    deployer = _role("cesyncDeployer")
    needed = _role("cesyncPlanner") | {permission("POST", _collection(k.collection)) for k in V1}
    needed |= {permission("PATCH", _one(k.collection)) for k in V1}
    needed |= {permission("DELETE", _one(k.collection)) for k in V1 if k.collection != "apps"}  # never deletes an app
    needed |= {
        permission("POST", f"{APP}/versions"),
        permission("DELETE", f"{APP}/versions/v"),
        permission("POST", f"{APP}/versions/v:restore"),
        permission("GET", "projects/p/locations/l/operations/o"),
        permission("POST", f"{APP}:executeTool"),
    }
    assert needed - deployer == set(), f"the deployer role lacks {sorted(needed - deployer)}"
    assert "ces.apps.delete" not in deployer
