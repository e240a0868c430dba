"""``releases/<deployment>.yaml``: how new app versions reach one of the repo's deployments
(core.release.ReleaseSpec), read with its problems at file:line:col.

The schedule lives beside the deployment's file, not in it: ``deployments/<id>.yaml`` is the
Deployment as CES holds it (checked against the API, exported, pulled), the schedule cesync's own."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from ..api.jsonvalue import has_path
from ..api.kinds import ResourceKind
from ..core.yamlfile import load_text, read_text
from ..errors import ConfigError, Problem

if TYPE_CHECKING:  # its models build when a schedule is read: validate and plan of a repo without one never do
    from ..core.release import ReleaseSpec

__all__ = ["FOLDER", "RELEASED", "load_release", "released_fields"]

FOLDER = "releases"
# What cesync release writes to a deployment with a schedule: a plan leaves them as the release left
# them (ignoreChanges), or every apply after a release would put the version served before back.
RELEASED = ("appVersion", "experimentConfig")


def released_fields(root: Path, kind: ResourceKind, rid: str) -> tuple[str, ...]:
    """RELEASED for a deployment (a kind that serves versions) that has releases/ID.yaml; () for anything else."""
    return RELEASED if kind.serves and (root / FOLDER / f"{rid}.yaml").is_file() else ()


def load_release(root: Path, deployment: str) -> tuple[str, ReleaseSpec]:
    """(the file's path in the repo, its schedule); ConfigError naming what is wrong and where."""
    display = f"{FOLDER}/{deployment}.yaml"
    path = root / display
    if not path.is_file():
        raise ConfigError(
            [Problem(display, 1, 1, f"no release schedule for deployment {deployment!r}: write {display} (see docs/releases.md)")]
        )
    text = read_text(path, display, root=root.resolve())
    doc = load_text(text, display) if isinstance(text, str) else text
    if isinstance(doc, Problem):
        raise ConfigError([doc])
    if not isinstance(doc.data, dict):
        raise ConfigError([doc.problem((), "a release schedule is a mapping with 'steps' (and 'gate')")])
    from ..core.release import ReleaseSpec

    try:
        return display, ReleaseSpec.model_validate(doc.data)
    except ValidationError as exc:
        problems = []
        for e in exc.errors():
            loc = tuple(p for p in e["loc"] if isinstance(p, (str, int)))
            while loc and not has_path(doc.data, loc):
                loc = loc[:-1]
            where = ".".join(str(p) for p in e["loc"])
            problems.append(doc.problem(loc, f"{where}: {e['msg'].removeprefix('Value error, ')}"))
        raise ConfigError(problems) from None
