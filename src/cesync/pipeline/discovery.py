"""The apps of a repo that holds several: one entry per (folder with a cesync.yaml, environment)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.scrubber import Scrubber
from ..errors import ConfigError
from ..repo.repo import load_repo
from .masking import remember_sensitive

if TYPE_CHECKING:  # the HTTP client loads when a command first uses it (see client/__init__.py)
    pass


SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".cesync"}


def find_apps(root: Path, env_names: set[str] | None = None, *, scrubber: Scrubber) -> list[dict[str, str]]:
    """One entry per (folder with a cesync.yaml, environment): the jobs of a CI matrix. Each app's
    sensitive values are told to the run's scrubber before its entries are made.

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
        remember_sensitive(scrubber, repo)
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
