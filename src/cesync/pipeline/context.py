"""The run context of one environment: the repo rendered, its sensitive values and fields, the
endpoint, and a client for it (open_context is where every command that talks to an app starts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..api.resource import Resource
from ..client.connect import endpoint_for
from ..core.planseal import binding_key, desired_digest
from ..core.scrubber import Scrubber
from ..core.yamlfile import Path_
from ..errors import CesyncError
from ..repo.config import EMBEDDED
from ..repo.keys import plan_key
from ..repo.repo import EnvTarget, Repo, load_repo
from .masking import remember_sensitive, sensitive_fields
from .readahead import ReadAhead

if TYPE_CHECKING:  # the HTTP client loads when a command first uses it (see client/__init__.py)
    from ..client.api import CesClient, RetryPolicy


@dataclass
class Context:
    repo: Repo
    env: EnvTarget
    desired: list[Resource]
    scrubber: Scrubber  # the run's: told every sensitive value of the repo, hands it to what prints or writes
    endpoint: str | None = None
    secrets: dict[str, str] = field(default_factory=dict)  # sensitive NAME -> resolved value (memory only)
    hidden: dict[tuple[str, str], list[Path_]] = field(default_factory=dict)  # (kind, id) -> sensitive body paths
    read_ahead: ReadAhead | None = None  # the app, read while the repo rendered (open_context(read_ahead=True))
    # where the embedded emulator keeps its state (.cesync/ENV.json): the repo's root, unless the
    # repo was rendered from a commit's tree in a temporary folder (promotion)
    state_root: Path | None = None
    promotion: tuple[str, str] = ("", "")  # (environment, commit): the repo was rendered from that commit's tree
    destroy: bool = False  # a tear-down: nothing is desired, so every resource cesync owns is deleted (destroying)
    ignore: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)  # ignoreChanges (core.ignore)

    def digest(self, key: bytes) -> str:
        return desired_digest(self.env.name, self.env.parent, self.desired, key)

    def binding_key(self, salt: str) -> bytes:
        """The key of a saved plan's digest, body hashes and seal (cesync.core.planseal.binding_key)."""
        return binding_key(self.secrets, salt, plan_key())

    @property
    def endpoint_url(self) -> str:
        return endpoint_for(self.env, self.endpoint)

    def client(self, *, retry: RetryPolicy | None = None, max_connections: int = 32) -> CesClient:
        from ..client import connect

        root = self.state_root or self.repo.root
        return connect(
            self.env, root, override=self.endpoint, retry=retry, max_connections=max_connections, scrubber=self.scrubber
        )


def destroying(ctx: Context) -> Context:
    """The context of a tear-down (plan --destroy, apply --destroy, cesync destroy): the repo still
    renders (the environment must exist and its files be valid), but nothing of it is desired,
    so the plan deletes what prune deletes and writes nothing; the app itself is never deleted."""
    ctx.desired, ctx.hidden, ctx.destroy = [], {}, True
    return ctx


def open_context(
    directory: Path,
    env_name: str | None,
    endpoint: str | None = None,
    variables: dict[str, str] | None = None,
    *,
    read_ahead: bool = False,
    preview: str | None = None,
    scrubber: Scrubber,
) -> Context:
    """variables: --var/--var-file values, which win over cesync.yaml and the process environment.

    scrubber: the run's, told every sensitive value here (remember_sensitive) before anything
    is rendered, so that no output of the command, a problem message included, shows one.

    read_ahead: read the app (read_remote) in a thread while the repo renders, for make_plan;
    the read waits on the network most of its time, rendering on the CPU. It starts as the
    rendering does, after any fork (repo/parallel.py), or, when a run before left its parse
    cache (the files most likely load from it whole: nothing to fork for), as soon as
    cesync.yaml is read. A repo read with the thread running is read in this process alone.
    preview: render for the preview app NAME of the environment (pipeline.preview.preview_env).
    """
    early: list[ReadAhead] = []

    def configured(repo: Repo) -> None:  # the app is read from here on, while the files load
        env, _ = _environment(repo, env_name, variables, preview, scrubber)
        if _can_read_ahead(env, endpoint):
            early.append(ReadAhead(env, repo.root, endpoint, repo.config.owner or "", scrubber=scrubber))
            early[0].start()
            early[0].wait_connected()  # the read first: the files load from the cache while it waits on the network

    try:
        repo = load_repo(directory, configured=configured if read_ahead else None)
    except BaseException:
        for started in early:
            started.cancel()
        raise
    ahead = early[0] if early else None
    try:
        env, secrets = _environment(repo, env_name, variables, preview, scrubber)
        if ahead is None and read_ahead and _can_read_ahead(env, endpoint):
            ahead = ReadAhead(env, repo.root, endpoint, repo.config.owner or "", scrubber=scrubber)
        desired = repo.render(env, started=ahead.start if ahead is not None and not early else None)
        hidden = sensitive_fields(repo, env, desired, secrets)
        remember_sensitive(scrubber, repo, secrets, desired)
    except BaseException:
        if ahead is not None:
            ahead.cancel()
        raise
    return Context(repo, env, desired, scrubber, endpoint, secrets, hidden, ahead, ignore=repo.ignore_rules(env))


def _environment(
    repo: Repo, env_name: str | None, variables: dict[str, str] | None, preview: str | None, scrubber: Scrubber
) -> tuple[EnvTarget, dict[str, str]]:
    """The environment rendered for, and its sensitive values, told to the scrubber first."""
    repo.overrides = dict(variables or {})
    remember_sensitive(scrubber, repo)
    env = repo.env(env_name)
    if preview is not None:
        from .preview import preview_env

        env = preview_env(env, preview)
    secrets = repo.sensitive_values(env)
    remember_sensitive(scrubber, repo, secrets)
    return env, secrets


def _can_read_ahead(env: EnvTarget, endpoint: str | None) -> bool:
    """Not for the embedded emulator (its state file is the app: one reader at a time), nor
    for an endpoint that is wrong (its error is reported after the repo's problems)."""
    try:
        return endpoint_for(env, endpoint) != EMBEDDED
    except CesyncError:
        return False
