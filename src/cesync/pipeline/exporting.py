"""Export and promotion: an app read into repo files, and repo files (or a folder) planned against
an app's resources with no API call (export diff, promote, pull's verify, adopt)."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ..api.resource import Resource
from ..core.plan import Plan
from ..core.planbuild import build_plan
from ..core.scrubber import Scrubber
from ..core.targets import resolve_targets
from ..core.yamlfile import read_text
from ..core.yamlout import to_yaml
from ..errors import CesyncError, ConfigError, Problem
from ..repo.files import write_tree
from ..repo.repo import EnvTarget, Repo, load_repo
from ..sync.export import ExportedRepo, export_repo, modeline
from ..sync.remote import read_existing
from .masking import hidden_fields, remember_sensitive, sensitive_fields
from .planning import app_to_create, plan_time

if TYPE_CHECKING:  # the HTTP client loads when a command first uses it (see client/__init__.py)
    from ..client.api import CesClient


def target_for_app(env_name: str, parent: str, endpoint: str | None, variables: dict[str, str] | None = None) -> EnvTarget:
    """An environment for an app that has no repo yet (export --app, import-archive)."""
    match = re.fullmatch(r"projects/([^/]+)/locations/([^/]+)/apps/([^/]+)", parent)
    if not match:
        raise CesyncError(f"--app must be projects/PROJECT/locations/LOCATION/apps/APP, not {parent!r}")
    project, location, app = match.groups()
    return EnvTarget(env_name, project, location, app, endpoint, dict(variables or {}), {}, False)


def config_for(env: EnvTarget) -> str:
    """The cesync.yaml that holds just this environment."""
    fields: dict[str, object] = {"project": env.project, "location": env.location, "app": env.app}
    if env.endpoint:
        fields["endpoint"] = env.endpoint
    if env.vars:
        fields["vars"] = dict(sorted(env.vars.items()))
    return modeline("cesync", 0) + to_yaml({"version": 1, "environments": {env.name: fields}})


def policy_files(repo: Repo) -> dict[str, str]:
    """The files of the policies folder the repo's cesync.yaml names (path in the repo -> text), as
    export carries them: the export copies cesync.yaml, so it must hold the folder that names, or
    the exported repo would not load. The app holds no policy; they are the repo's own."""
    folder = repo.config.policies
    base = repo.root / folder if folder else None
    if base is None or not base.is_dir():
        return {}
    root = repo.root.resolve()
    files: dict[str, str] = {}
    for path in sorted(p for p in base.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()):
        display = path.relative_to(repo.root).as_posix()
        text = read_text(path, display, root=root)
        if isinstance(text, Problem):
            raise ConfigError([text])
        files[display] = text
    return files


async def export_app(
    client: CesClient,
    env: EnvTarget,
    config_text: str,
    targets: Iterable[str] = (),
    sensitive: dict[str, str] | None = None,
    *,
    scrubber: Scrubber,
) -> tuple[ExportedRepo, list[Resource]]:
    """Read the app and turn it into repo files (see export.py); targets limit it to some resources;
    sensitive (NAME -> value) go back as ${NAME} wherever they occur, and a file that would hold
    one, or a value the run's scrubber knows, is refused. The tools CES makes are left out, each
    with a note saying why (exported.notes)."""
    left_out: list[str] = []
    remote = await read_existing(client, env.parent, left_out)
    selected = resolve_targets(targets, {r.key for r in remote})
    if selected is not None:
        remote = [r for r in remote if r.key in selected]
    for r in remote:
        expected = r.kind.resource_name(env.parent, r.id)
        if r.body.get("name") != expected:
            raise CesyncError(
                f"the server returned a {r.kind} named {r.body.get('name')!r}, which is not a {r.kind} of {env.parent}; "
                "nothing was written"
            )
    exported = export_repo(
        remote,
        parent=env.parent,
        variables=env.vars,
        urls=env.urls,
        config_text=config_text,
        sensitive=sensitive,
        scrubber=scrubber,
    )
    exported.notes[:0] = left_out
    return exported, remote


def plan_files(
    files: dict[str, str],
    env_name: str,
    remote: list[Resource],
    *,
    prune: bool = True,
    variables: dict[str, str] | None = None,
    hidden_by: Repo | None = None,
    scrubber: Scrubber,
) -> Plan:
    """Load repo files (in a temporary folder), render them for one environment, plan against remote.

    hidden_by: a repo whose files also say which fields hold sensitive values (diff: the
    promoted files were made from another environment's app). scrubber: the run's, told the
    sensitive values of the files' repo (see plan_folder)."""
    with tempfile.TemporaryDirectory(prefix="cesync-") as tmp:
        write_tree(Path(tmp) / "repo", files)
        return plan_folder(
            Path(tmp) / "repo", env_name, remote, prune=prune, variables=variables, hidden_by=hidden_by, scrubber=scrubber
        )


def plan_folder(
    folder: Path,
    env_name: str,
    remote: list[Resource],
    *,
    prune: bool = True,
    variables: dict[str, str] | None = None,
    hidden_by: Repo | None = None,
    scrubber: Scrubber,
) -> Plan:
    """Render the repo in folder for one environment and plan it against remote (no API calls).

    scrubber: the run's, told the folder's sensitive values before it renders (remember_sensitive)."""
    repo = load_repo(folder)
    repo.overrides = dict(variables or {})
    remember_sensitive(scrubber, repo)
    env = repo.env(env_name)
    secrets = repo.sensitive_values(env)
    remember_sensitive(scrubber, repo, secrets)
    desired = repo.render(env)
    hidden = sensitive_fields(repo, env, desired, secrets)
    remember_sensitive(scrubber, repo, secrets, desired)
    if hidden_by is not None:
        for key, paths in hidden_fields(hidden_by, hidden_by.env(env_name), [*desired, *remote]).items():
            hidden[key] = sorted({*map(tuple, hidden.get(key, [])), *paths}, key=lambda p: [str(x) for x in p])
    return build_plan(
        env.name,
        env.parent,
        desired,
        remote,
        prune=prune,
        sensitive=hidden,
        app_body=app_to_create(env, remote),
        created_at=plan_time(),
        ignore=repo.ignore_rules(env),
    )
