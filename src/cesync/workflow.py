"""The pipeline end to end for one environment: load -> render -> read -> plan (-> apply).

This is the only place that joins the pure core to the repo on disk and to the API.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .client import connect
from .client.api import CesClient, RetryPolicy
from .plan import Plan, build_plan, desired_digest
from .remote import read_remote
from .repo import Desired, EnvTarget, Repo, load_repo

__all__ = ["Context", "make_plan", "open_context"]


@dataclass
class Context:
    repo: Repo
    env: EnvTarget
    desired: list[Desired]
    endpoint: str | None = None

    @property
    def triples(self) -> list[tuple[str, str, dict[str, object]]]:
        return [(d.kind, d.id, d.body) for d in self.desired]

    @property
    def digest(self) -> str:
        return desired_digest(self.env.name, self.env.parent, self.triples)

    def client(self, *, retry: RetryPolicy | None = None, max_connections: int = 32) -> CesClient:
        return connect(self.env, self.repo.root, override=self.endpoint, retry=retry, max_connections=max_connections)


def open_context(directory: Path, env_name: str | None, endpoint: str | None = None) -> Context:
    repo = load_repo(directory)
    env = repo.env(env_name)
    return Context(repo, env, repo.render(env), endpoint)


async def make_plan(ctx: Context, client: CesClient, *, prune: bool | None = None, targets: set[str] | None = None) -> Plan:
    remote = await read_remote(client, ctx.env.parent)
    return build_plan(
        ctx.env.name,
        ctx.env.parent,
        ctx.triples,
        remote,
        prune=ctx.env.prune if prune is None else prune,
        targets=targets,
    )
