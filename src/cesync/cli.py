"""The command line: wiring, output and exit codes only.

Every command turns a CesyncError into one clear message on stderr and exit 1;
a user never sees a traceback (set CESYNC_DEBUG=1 to get one).
"""

from __future__ import annotations

import functools
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from . import __version__
from .errors import CesyncError, ConfigError
from .jsonschema import render_schemas
from .repo import load_repo
from .scaffold import write_scaffold

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK, EXIT_ERROR, EXIT_CHANGES, EXIT_INTERRUPTED = 0, 1, 2, 130


def err(message: str) -> None:
    click.echo(message, err=True)


def handled(fn: F) -> F:
    """Run a command body; map cesync errors and interrupts to messages and exit codes."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ConfigError as exc:
            for problem in exc.problems:
                err(str(problem))
            err(f"{len(exc.problems)} problem{'s' if len(exc.problems) != 1 else ''} found")
            sys.exit(EXIT_ERROR)
        except CesyncError as exc:
            err(f"error: {exc}")
            sys.exit(EXIT_ERROR)
        except KeyboardInterrupt:
            err("interrupted")
            sys.exit(EXIT_INTERRUPTED)
        except click.exceptions.Exit:
            raise
        except click.ClickException:
            raise
        except Exception as exc:  # a bug: still no traceback unless asked for
            if os.environ.get("CESYNC_DEBUG"):
                traceback.print_exc()
            err(f"internal error: {type(exc).__name__}: {exc} (set CESYNC_DEBUG=1 for a traceback, and please report it)")
            sys.exit(EXIT_ERROR)

    return wrapper  # type: ignore[return-value]


dir_option = click.option(
    "--dir", "directory", type=click.Path(file_okay=False, path_type=Path), default=Path("."), show_default=True, help="The cesync repo."
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="cesync")
def main() -> None:
    """Manage Google Cloud CES agent tools as code: validate, plan, apply."""


@main.command()
@dir_option
@click.option("--env", "envs", multiple=True, help="Validate for these environments only (default: all).")
@handled
def validate(directory: Path, envs: tuple[str, ...]) -> None:
    """Check every file offline; report each problem as file:line:col."""
    repo = load_repo(directory)
    names = list(envs) or repo.env_names
    for name in names:
        repo.env(name)  # unknown names fail here with the list of known ones
    problems = repo.validate(names)
    if problems:
        raise ConfigError(problems)
    count = len(repo.files)
    click.echo(f"ok: {count} file{'s' if count != 1 else ''} valid for {', '.join(names)}")


@main.command()
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("schemas"), show_default=True)
@click.option("--check", is_flag=True, help="Exit 1 if the files in --out are not current.")
@handled
def schema(out: Path, check: bool) -> None:
    """Write JSON Schemas for tool files, toolset files and cesync.yaml."""
    stale = []
    for name, text in render_schemas().items():
        path = out / name
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current == text:
            continue
        stale.append(str(path))
        if not check:
            out.mkdir(parents=True, exist_ok=True)
            _atomic_write(path, text)
    if check and stale:
        raise CesyncError(f"stale JSON Schemas: {', '.join(stale)}; run 'cesync schema --out {out}'")
    click.echo(f"{'stale' if check and stale else 'ok'}: {len(stale)} schema file(s) {'written' if not check else 'out of date'}")


@main.command()
@dir_option
@click.option("--app", default="my-app", show_default=True, help="The CES app id of the local environment.")
@handled
def init(directory: Path, app: str) -> None:
    """Scaffold a new repo: cesync.yaml, an example tool, .gitignore."""
    for path in write_scaffold(directory, app):
        click.echo(f"created {path}")
    click.echo("next: cesync validate && cesync plan --env local")


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


if __name__ == "__main__":  # pragma: no cover
    main()
