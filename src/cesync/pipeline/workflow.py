"""The pipeline end to end for one environment: load -> render -> read -> plan (-> apply).

This is the only place that joins the pure core to the repo on disk and to the API.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import os
import re
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..api.kinds import APP, KINDS, by_collection
from ..api.resource import Resource
from ..client.connect import endpoint_for
from ..core.documents import parse_document
from ..core.plan import Plan, bind, build_plan, desired_digest, narrow, safety_refusal, seal_matches
from ..core.sensitive import (
    KEY_ENV,
    binding_key,
    field_paths,
    input_only_fields,
    input_only_values,
    new_salt,
    plan_key,
    remember,
    same,
    seal,
)
from ..core.targets import resolve_targets, target_keys
from ..core.yamlfile import Path_
from ..core.yamlout import to_yaml
from ..errors import CesyncError, ConfigError, NotFound, PlanFileError
from ..models import TOOL_TYPES
from ..repo.config import EMBEDDED
from ..repo.files import write_tree
from ..repo.repo import ID_RE, EnvTarget, Repo, load_repo
from ..sync.export import ExportedRepo, export_repo, modeline
from ..sync.remote import list_app, read_existing, read_remote

if TYPE_CHECKING:  # the HTTP client loads when a command first uses it (see client/__init__.py)
    from ..client.api import CesClient, RetryPolicy
    from ..core.record import AppliedRecord

__all__ = [
    "Context",
    "config_for",
    "export_app",
    "find_apps",
    "make_plan",
    "narrow_saved",
    "open_context",
    "plan_files",
    "plan_folder",
    "read_plan",
    "target_for_app",
    "tool_names",
]


@dataclass
class Context:
    repo: Repo
    env: EnvTarget
    desired: list[Resource]
    endpoint: str | None = None
    secrets: dict[str, str] = field(default_factory=dict)  # sensitive NAME -> resolved value (memory only)
    hidden: dict[tuple[str, str], list[Path_]] = field(default_factory=dict)  # (kind, id) -> sensitive body paths
    read_ahead: _ReadAhead | None = None  # the app, read while the repo rendered (open_context(read_ahead=True))
    # where the embedded emulator keeps its state (.cesync/ENV.json): the repo's root, unless the
    # repo was rendered from a commit's tree in a temporary folder (promotion)
    state_root: Path | None = None
    promotion: tuple[str, str] = ("", "")  # (environment, commit): the repo was rendered from that commit's tree

    def digest(self, key: bytes) -> str:
        return desired_digest(self.env.name, self.env.parent, self.desired, key)

    def binding_key(self, salt: str) -> bytes:
        """The key of a saved plan's digest, body hashes and seal (cesync.core.sensitive.binding_key)."""
        return binding_key(self.secrets, salt, plan_key())

    @property
    def endpoint_url(self) -> str:
        return endpoint_for(self.env, self.endpoint)

    def client(self, *, retry: RetryPolicy | None = None, max_connections: int = 32) -> CesClient:
        from ..client import connect

        root = self.state_root or self.repo.root
        return connect(self.env, root, override=self.endpoint, retry=retry, max_connections=max_connections)


def open_context(
    directory: Path,
    env_name: str | None,
    endpoint: str | None = None,
    variables: dict[str, str] | None = None,
    *,
    read_ahead: bool = False,
    preview: str | None = None,
) -> Context:
    """variables: --var/--var-file values, which win over cesync.yaml and the process environment.

    read_ahead: read the app (read_remote) in a thread while the repo renders, for make_plan;
    the read waits on the network most of its time, rendering on the CPU.
    preview: render for the preview app NAME of the environment (pipeline.preview.preview_env).
    """
    repo = load_repo(directory)
    repo.overrides = dict(variables or {})
    env = repo.env(env_name)
    if preview is not None:
        from .preview import preview_env

        env = preview_env(env, preview)
    secrets = repo.sensitive_values(env)
    remember(secrets.values())  # before rendering: a problem message must not print one either
    ahead = _ReadAhead(env, repo.root, endpoint) if read_ahead and _can_read_ahead(env, endpoint) else None
    try:
        desired = repo.render(env, started=ahead.start if ahead else None)
        hidden = sensitive_fields(repo, env, desired, secrets)
    except BaseException:
        if ahead is not None:
            ahead.cancel()
        raise
    return Context(repo, env, desired, endpoint, secrets, hidden, ahead)


def _can_read_ahead(env: EnvTarget, endpoint: str | None) -> bool:
    """Not for the embedded emulator (its state file is the app: one reader at a time), nor
    for an endpoint that is wrong (its error comes after rendering, as before)."""
    try:
        return endpoint_for(env, endpoint) != EMBEDDED
    except CesyncError:
        return False


class _ReadAhead:
    """read_remote in a thread with its own event loop and client, started once rendering is.

    What it finds is given where the read was before, after rendering: its retry notices
    are held until then, its error is raised then (a repo problem is still reported first,
    and alone), and a failed render cancels it.
    """

    def __init__(self, env: EnvTarget, root: Path, endpoint: str | None) -> None:
        self._env, self._root, self._endpoint = env, root, endpoint
        self._notices: list[str] = []
        self._done: concurrent.futures.Future[_Read] = concurrent.futures.Future()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[_Read] | None = None
        self._begun = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cesync-read-ahead", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        self._done.set_running_or_notify_cancel()
        loop: asyncio.AbstractEventLoop | None = None
        try:
            loop = asyncio.new_event_loop()
            self._loop, self._task = loop, loop.create_task(self._read())
            self._begun.set()
            self._done.set_result(loop.run_until_complete(self._task))
        except BaseException as exc:
            self._done.set_exception(exc)
        finally:
            self._begun.set()  # cancel() waits for this: set whatever happened
            if loop is not None:
                loop.close()

    async def _read(self) -> _Read:
        from ..client import connect

        client = connect(self._env, self._root, override=self._endpoint)
        client.notify = self._notices.append
        async with client:
            return await read_app(client, self._env)

    async def result(self) -> _Read:
        """The app as read; awaited, not joined: a Ctrl-C (asyncio.run cancels the awaiting task)
        cancels the read and ends plan at once, as when plan read the app itself."""
        from ..client.api import stderr_line

        read = asyncio.wrap_future(self._done)
        try:
            await asyncio.wait([read])  # not `await read`: the notices come before its error
        except asyncio.CancelledError:
            read.cancel()
            self.cancel()
            raise
        for line in self._notices:
            stderr_line(line)
        return read.result()

    def cancel(self) -> None:
        if not self._thread.is_alive():
            return
        self._begun.wait()
        if self._loop is not None and self._task is not None:
            with contextlib.suppress(RuntimeError):  # the loop has finished and closed meanwhile
                self._loop.call_soon_threadsafe(self._task.cancel)
        self._thread.join(timeout=10)


_Read = tuple[list[Resource], "AppliedRecord | None"]


async def read_app(client: CesClient, env: EnvTarget) -> _Read:
    """The app's resources and cesync's last applied record of env (None: no app, or no record)."""
    from ..sync.record import last_applied

    remote = await read_remote(client, env.parent)
    if not any(r.kind == APP for r in remote):
        return remote, None  # no app: no versions either
    return remote, await last_applied(client, env)


async def label_drift(client: CesClient, plan: Plan, since: str) -> Plan:
    """Each drifted change with its author and time, from CES's changelogs after the record (since)."""
    from ..sync.record import changes_since

    if not plan.drifted:
        return plan
    found = await changes_since(client, plan.app, since, {c.name for c in plan.drifted})
    changes = tuple(
        dataclasses.replace(c, drift={**c.drift, "by": found[c.name][0] or None, "at": found[c.name][1] or None})
        if c.drift is not None and c.name in found
        else c
        for c in plan.changes
    )
    return replace(plan, changes=changes)


def base_of(record: AppliedRecord | None) -> dict[tuple[str, str], dict[str, Any]] | None:
    """The record's snapshot per (kind, id): the base of a three-way plan."""
    if record is None:
        return None
    from ..sync.record import KIND_OF

    base: dict[tuple[str, str], dict[str, Any]] = {}
    for collection, items in record.snapshot.items():
        if collection == "app" and isinstance(items, dict):
            base[(APP, APP)] = items
        elif collection in KIND_OF and isinstance(items, list):
            base.update(
                {(KIND_OF[collection], str(i.get("name", "")).rsplit("/", 1)[-1]): i for i in items if isinstance(i, dict)}
            )
    return base


def sensitive_fields(
    repo: Repo, env: EnvTarget, desired: list[Resource], secrets: dict[str, str]
) -> dict[tuple[str, str], list[Path_]]:
    """Per resource, the paths of its sensitive values: those of sensitive variables, and every
    INPUT_ONLY field it sets (one-time credentials: never printed, masked in plan files)."""
    names = repo.sensitive_names(env)
    sources = {(f.kind, f.id): f.doc.data for f in repo.files} if names else {}
    out: dict[tuple[str, str], list[Path_]] = {}
    for d in desired:
        model = KINDS[d.kind].model_name
        remember(input_only_values(model, d.body))  # scrubbed from whatever is printed or logged
        paths = field_paths(sources.get((d.kind, d.id)), d.body, names, secrets.values()) if names else []
        paths += [(f,) for f in input_only_fields(model, d.body) if (f,) not in paths]
        if paths:
            out[(d.kind, d.id)] = paths
    return out


async def read_plan(
    ctx: Context,
    *,
    prune: bool | None = None,
    targets: Iterable[str] | None = None,
    resend_input_only: bool = False,
    prune_unmanaged: bool = False,
) -> Plan:
    """make_plan with the app read ahead (open_context(read_ahead=True)) or, without it, read now."""
    if ctx.read_ahead is not None:
        return await make_plan(
            ctx, None, prune=prune, targets=targets, resend_input_only=resend_input_only, prune_unmanaged=prune_unmanaged
        )
    async with ctx.client() as client:
        return await make_plan(
            ctx, client, prune=prune, targets=targets, resend_input_only=resend_input_only, prune_unmanaged=prune_unmanaged
        )


async def make_plan(
    ctx: Context,
    client: CesClient | None,
    *,
    prune: bool | None = None,
    targets: Iterable[str] | None = None,
    salt: str | None = None,
    resend_input_only: bool = False,
    prune_unmanaged: bool = False,
) -> Plan:
    """targets: --target values (ID, kind/ID, kinds/ID); one that names nothing is an error.

    resend_input_only: send the INPUT_ONLY fields the repo sets again (see core.plan.build_plan).
    prune_unmanaged: prune deletes what cesync does not own too (made by hand)."""
    prune_ = ctx.env.prune if prune is None else prune
    salt = salt or new_salt()
    key = ctx.binding_key(salt)
    plan, selected, _ = await _plan_against_remote(
        ctx, client, prune_, targets, key, narrow=True, resend=resend_input_only, prune_unmanaged=prune_unmanaged
    )
    safety = ctx.repo.config.safety
    plan = replace(
        plan,
        targets=tuple(sorted(selected or ())),
        refused=safety_refusal(plan, safety.maxChangeFraction, safety.minResources, safety.maxUpdateFraction),
    )
    return seal_plan(plan, ctx, salt, key)


async def _plan_against_remote(
    ctx: Context,
    client: CesClient | None,
    prune: bool,
    targets: Iterable[str] | None,
    key: bytes,
    *,
    narrow: bool,
    resend: bool = False,
    prune_unmanaged: bool = False,
) -> tuple[Plan, set[str] | None, list[Resource]]:
    """Read the app, resolve --target against what exists on either side, and diff.

    narrow: the plan itself keeps only the targets (a saved plan is recomputed whole and
    narrowed afterwards, so that it can be compared with what was saved)."""
    ahead, ctx.read_ahead = ctx.read_ahead, None  # read once, as before
    if ahead is not None:
        remote, record = await ahead.result()
    else:
        assert client is not None, "a client, unless the app was read ahead"
        remote, record = await read_app(client, ctx.env)
    known = {(d.kind, d.id) for d in ctx.desired} | {(r.kind, r.id) for r in remote}
    selected = target_keys(resolve_targets(targets or (), known))
    plan = build_plan(
        ctx.env.name,
        ctx.env.parent,
        ctx.desired,
        remote,
        prune=prune,
        targets=selected if narrow else None,
        sensitive=ctx.hidden,
        app_body=app_to_create(ctx.env, remote),
        resend_input_only=resend,
        owned=record.owned if record is not None else frozenset(),
        prune_unmanaged=prune_unmanaged,
        base=base_of(record),
        key=key,
    )
    if record is not None:
        plan = replace(plan, record=record.version)
        if plan.drifted and client is not None:
            plan = await label_drift(client, plan, record.time)
        elif plan.drifted:  # read ahead, without a client of its own
            async with ctx.client() as own:
                plan = await label_drift(own, plan, record.time)
    return plan, selected, remote


def app_to_create(env: EnvTarget, remote: list[Resource]) -> dict[str, Any] | None:
    """The app's body when it does not exist and the repo has no app.yaml: its id as display name."""
    return None if any(r.kind == APP for r in remote) else {"displayName": env.app}


def seal_plan(plan: Plan, ctx: Context, salt: str, key: bytes) -> Plan:
    """The plan with where it was made, the keyed hashes of the sensitive values, and bound (plan.bind)."""
    sealed = replace(
        plan.sensitive,
        salt=salt,
        key=KEY_ENV if plan_key() else "none",
        values=seal(ctx.secrets, salt, plan_key()) if ctx.secrets else {},
    )
    promoted_from, commit = ctx.promotion
    where = replace(plan, endpoint=ctx.endpoint_url, sensitive=sealed, promoted_from=promoted_from, commit=commit)
    return bind(where, key)


async def narrow_saved(
    ctx: Context, client: CesClient, saved: Plan, *, prune: bool | None = None, targets: Iterable[str] | None = None
) -> Plan:
    """The part of a saved plan that may run (see plan.narrow); PlanFileError before any write otherwise.

    targets (apply --target) narrow a saved plan further: only its changes they name run.
    They never widen it: a target the plan has no change for adds nothing.
    """
    key = check_saved(ctx, saved)
    fresh, selected, remote = await _plan_against_remote(
        ctx,
        client,
        saved.prune,
        targets,
        key,
        narrow=False,
        resend=saved.resend_input_only,
        prune_unmanaged=saved.prune_unmanaged,
    )
    fresh = seal_plan(fresh, ctx, saved.sensitive.salt, key)
    present = {f"{r.kind}/{r.id}" for r in remote} | {f"{d.kind}/{d.id}" for d in ctx.desired}
    gone = frozenset(c.key for c in saved.changes if c.action == "delete" and c.key not in present)
    allowed = narrow(saved, fresh, prune=prune, gone=gone)
    scope = set(saved.targets) if saved.targets else None  # a --target plan stays that partial
    if selected is not None:
        scope = selected if scope is None else scope & selected
    if scope is None:
        return allowed
    return replace(allowed, changes=tuple(c for c in allowed.changes if c.key in scope), targets=tuple(sorted(scope)))


def check_saved(ctx: Context, saved: Plan) -> bytes:
    """The checks that need no connection: environment, endpoint, sensitive values, the seal, the repo digest.

    Returns the plan's binding key (cesync.core.sensitive.binding_key), made from this
    process's CESYNC_PLAN_KEY and sensitive values, never from what the file says."""
    if saved.environment != ctx.env.name or saved.app != ctx.env.parent:
        raise PlanFileError(f"the plan is for {saved.environment} ({saved.app}), not {ctx.env.name} ({ctx.env.parent})")
    if saved.endpoint != ctx.endpoint_url:
        raise PlanFileError(
            f"the plan was made against {saved.endpoint or '(no endpoint recorded)'}, this apply would write to "
            f"{ctx.endpoint_url}: refusing; make a new plan for this endpoint"
        )
    names, now = set(saved.sensitive.values), set(ctx.secrets)
    if names != now:
        diff = sorted(names ^ now)
        raise PlanFileError(
            f"sensitive variables {', '.join(diff)} are set at plan or apply time but not both: refusing; make a new plan"
        )
    if not saved.sensitive.salt:
        raise PlanFileError("the plan has no salt: the plan file was changed after it was made")
    current = seal(ctx.secrets, saved.sensitive.salt, plan_key())
    wrong = sorted(n for n in names if not same(current[n], saved.sensitive.values[n]))
    if wrong:
        hint = f" (or {KEY_ENV} differs between plan and apply)" if len(wrong) == len(names) else ""
        raise PlanFileError(
            f"sensitive variable{'s' if len(wrong) > 1 else ''} {', '.join(wrong)} "
            f"{'have' if len(wrong) > 1 else 'has'} another value than when the plan was made{hint}: "
            "refusing before any write; make a new plan"
        )
    key = ctx.binding_key(saved.sensitive.salt)
    if not seal_matches(saved, key):
        keyed = (saved.sensitive.key == KEY_ENV) != bool(plan_key())
        hint = f" ({KEY_ENV} is set for this apply, not for the plan)" if plan_key() else f" ({KEY_ENV} was set for the plan)"
        raise PlanFileError(
            "the plan file was changed after it was made (its seal does not match what it holds)"
            f"{hint if keyed else ''}: refusing before any connection; make a new plan"
        )
    if saved.digest != ctx.digest(key):
        raise PlanFileError("the repo changed since the plan was made (digest differs); make a new plan")
    return key


# --- export and promotion ---------------------------------------------------------------------


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


async def export_app(
    client: CesClient, env: EnvTarget, config_text: str, targets: Iterable[str] = (), sensitive: dict[str, str] | None = None
) -> tuple[ExportedRepo, list[Resource]]:
    """Read the app and turn it into repo files (see export.py); targets limit it to some resources;
    sensitive (NAME -> value) go back as ${NAME} wherever they occur."""
    remote = await read_existing(client, env.parent)
    selected = resolve_targets(targets, {(r.kind, r.id) for r in remote})
    if selected is not None:
        remote = [r for r in remote if (r.kind, r.id) in selected]
    for r in remote:
        expected = KINDS[r.kind].resource_name(env.parent, r.id)
        if r.body.get("name") != expected:
            raise CesyncError(
                f"the server returned a {r.kind} named {r.body.get('name')!r}, which is not a {r.kind} of {env.parent}; "
                "nothing was written"
            )
    exported = export_repo(
        remote, parent=env.parent, variables=env.vars, urls=env.urls, config_text=config_text, sensitive=sensitive
    )
    return exported, remote


def plan_files(
    files: dict[str, str],
    env_name: str,
    remote: list[Resource],
    *,
    prune: bool = True,
    variables: dict[str, str] | None = None,
    hidden_by: Repo | None = None,
) -> Plan:
    """Load repo files (in a temporary folder), render them for one environment, plan against remote.

    hidden_by: a repo whose files also say which fields hold sensitive values (diff: the
    promoted files were made from another environment's app)."""
    with tempfile.TemporaryDirectory(prefix="cesync-") as tmp:
        write_tree(Path(tmp) / "repo", files)
        return plan_folder(Path(tmp) / "repo", env_name, remote, prune=prune, variables=variables, hidden_by=hidden_by)


def plan_folder(
    folder: Path,
    env_name: str,
    remote: list[Resource],
    *,
    prune: bool = True,
    variables: dict[str, str] | None = None,
    hidden_by: Repo | None = None,
) -> Plan:
    """Render the repo in folder for one environment and plan it against remote (no API calls)."""
    repo = load_repo(folder)
    repo.overrides = dict(variables or {})
    env = repo.env(env_name)
    secrets = repo.sensitive_values(env)
    remember(secrets.values())
    desired = repo.render(env)
    hidden = sensitive_fields(repo, env, desired, secrets)
    if hidden_by is not None:
        for key, paths in hidden_fields(hidden_by, hidden_by.env(env_name), [*desired, *remote]).items():
            hidden[key] = sorted({*map(tuple, hidden.get(key, [])), *paths}, key=lambda p: [str(x) for x in p])
    return build_plan(env.name, env.parent, desired, remote, prune=prune, sensitive=hidden, app_body=app_to_create(env, remote))


# --- versions ---------------------------------------------------------------------------------


async def restore_plan(client: CesClient, env: EnvTarget, version: str, repo: Repo | None = None) -> tuple[str, Plan]:
    """The version's full name and, as a plan, what restoring it would change in the app now.

    A version's snapshot holds the app's settings, agents, tools, toolsets, guardrails and
    examples (not deployments): compared with the app, deletes included. Fields the repo
    renders from a sensitive variable, and fields holding a known sensitive value, are
    masked on both sides: the snapshot's old value is one cesync may no longer know.
    """
    name = version if version.startswith(env.parent + "/versions/") else f"{env.parent}/versions/{version}"
    if ("/" in version and name != version) or not ID_RE.match(name.rsplit("/", 1)[-1]):
        raise CesyncError(f"{version!r} is not a version of {env.parent}; 'cesync versions' lists them")
    try:
        found = await client.get(name)
    except NotFound:
        raise CesyncError(f"no version {version!r} in {env.parent}; 'cesync versions' lists them") from None
    snapshot = found.get("snapshot") if isinstance(found.get("snapshot"), dict) else {}
    assert isinstance(snapshot, dict)
    wanted = [Resource(APP, APP, snapshot["app"])] if isinstance(snapshot.get("app"), dict) else []
    for collection, items in snapshot.items():
        kind = by_collection(collection)
        if kind is not None and isinstance(items, list):
            for b in (b for b in items if isinstance(b, dict) and kind.managed(b)):
                rid = kind.id_in(env.parent, b.get("name"))
                if rid is None:
                    raise CesyncError(
                        f"the version's snapshot holds a {kind.name} named {str(b.get('name'))[:120]!r}, which is not a "
                        f"{kind.name} of {env.parent}: nothing was changed"
                    )
                wanted.append(Resource(kind.name, rid, b))
    remote = [r for r in await read_remote(client, env.parent) if r.kind == APP or r.kind in SNAPSHOT_KINDS]
    hidden = hidden_fields(repo, env, [*wanted, *remote]) if repo is not None else {}
    return name, build_plan(env.name, env.parent, wanted, remote, prune=True, sensitive=hidden)


def hidden_fields(repo: Repo, env: EnvTarget, bodies: Iterable[Resource]) -> dict[tuple[str, str], list[Path_]]:
    """Per (kind, id), the paths of bodies not rendered from the repo (a snapshot, another
    environment's app) that hold a sensitive value: where the repo's file references a
    sensitive ${NAME}, or where the text holds a value of any environment."""
    names, values = repo.sensitive_names(env), repo.every_sensitive_value()
    sources = {(f.kind, f.id): f.doc.data for f in repo.files}
    found: dict[tuple[str, str], set[Path_]] = {}
    for r in bodies:
        paths = {tuple(p) for p in field_paths(sources.get((r.kind, r.id)), r.body, names, values)}
        # $env_var copies a url into its schema: an old url hides there too
        schemas = {(*p[:-1], "openApiSchema") for p in paths if p and p[-1] == "url"}
        paths |= {p for p in schemas if _get_path(r.body, p) is not None}
        found.setdefault((r.kind, r.id), set()).update(paths)
    return {k: sorted(v, key=lambda p: [str(x) for x in p]) for k, v in found.items() if v}


def _get_path(data: Any, path: Path_) -> Any:
    for part in path:
        data = data.get(part) if isinstance(data, dict) else None
    return data


SNAPSHOT_KINDS = ("tool", "toolset", "agent", "guardrail", "example")  # what an AppSnapshot holds


# --- running tools ----------------------------------------------------------------------------


async def tool_names(client: CesClient, parent: str) -> dict[str, str]:
    """Display names and type-level names (``refund_policy``) -> local ids, for tests written by name."""
    listed = await list_app(client, parent)
    tools, toolsets = listed["tool"], listed["toolset"]
    names: dict[str, str] = {}
    for rid, t in ((r.id, r.body) for r in tools):
        kind = next((k for k in TOOL_TYPES if isinstance(t.get(k), dict)), None)
        for alias in (t.get("displayName"), t[kind].get("name") if kind else None):
            if isinstance(alias, str) and alias and alias != rid:
                names.setdefault(alias, rid)
    for rid, ts in ((r.id, r.body) for r in toolsets):
        if isinstance(ts.get("displayName"), str) and ts["displayName"] != rid:
            names.setdefault(ts["displayName"], rid)
        for operation in _operation_ids(ts):  # cxas-scrapi names an OpenAPI toolset's tool <toolset>_<operationId>
            names.setdefault(f"{ts.get('displayName') or rid}_{operation}", f"{rid}/{operation}")
    for rid in [r.id for r in tools] + [r.id for r in toolsets]:
        names.setdefault(rid, rid)  # the ids too, after the aliases: a name that names nothing is known as such
    return names


def _operation_ids(toolset: dict[str, Any]) -> list[str]:
    spec = toolset.get("openApiToolset")
    schema = spec.get("openApiSchema") if isinstance(spec, dict) else None
    try:
        doc = parse_document(schema) if isinstance(schema, str) else None
    except ValueError:
        return []
    paths = doc.get("paths") if isinstance(doc, dict) else None
    return [
        str(op["operationId"])
        for item in (paths.values() if isinstance(paths, dict) else [])
        if isinstance(item, dict)
        for op in item.values()
        if isinstance(op, dict) and op.get("operationId")
    ]


# --- several apps in one repo -----------------------------------------------------------------

SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".cesync"}


def find_apps(root: Path, env_names: set[str] | None = None) -> list[dict[str, str]]:
    """One entry per (folder with a cesync.yaml, environment): the jobs of a CI matrix.

    A folder that vanishes during the walk (another process cleaning up) is left out, as if
    it had never been there: os.walk skips what it cannot list, and an app whose cesync.yaml
    is gone by the time it is read is skipped, never taken for the one of a folder above.
    """
    entries: list[dict[str, str]] = []
    for config in _configs(root):
        rel = config.parent.relative_to(root)
        try:
            repo = load_repo(config.parent, resources=False)
        except ConfigError as exc:  # name the folder: every app has a cesync.yaml
            if not config.is_file():
                continue  # gone since the walk saw it
            if not rel.parts:
                raise
            raise ConfigError([dataclasses.replace(p, file=f"{rel.as_posix()}/{p.file}") for p in exc.problems]) from exc
        if repo.root != config.parent.resolve():
            continue  # its cesync.yaml went away meanwhile: load_repo found the one above
        for name in repo.env_names:
            if env_names and name not in env_names:
                continue
            entries.append({"dir": rel.as_posix() or ".", "environment": name, "app": repo.env(name).parent})
    return entries


def _configs(root: Path) -> list[Path]:
    found: list[Path] = []
    for folder, dirs, files in os.walk(root):  # errors (a folder gone meanwhile) are skipped
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        if "cesync.yaml" in files:
            found.append(Path(folder) / "cesync.yaml")
    return sorted(found)
