"""The command line: wiring, output and exit codes only.

Every command turns a CesyncError into one clear message on stderr and exit 1;
a user never sees a traceback (set CESYNC_DEBUG=1 to get one). Ctrl-C at any
moment exits 130 with one line: during start-up (imports) nothing has been read
or written yet, so the process leaves at once. The commands live in the modules
of this package by theme, each imported when one of its commands runs.
"""

from __future__ import annotations

import gc
import os
import sys

from .. import end_startup, guard_startup

_handler_before_startup = guard_startup(cli=True)

# cesync uses no pydantic plugin. Without this, building the first model makes pydantic look
# for plugins in the entry points of every installed distribution (30-100 ms of each command,
# more the more packages the environment holds); PYDANTIC_DISABLE_PLUGINS is pydantic's own
# documented switch, and a user who sets it keeps their value.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

import contextlib  # noqa: E402
import functools  # noqa: E402
import importlib  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar  # noqa: E402

import click  # noqa: E402

from .. import __version__  # noqa: E402
from ..core.scrubber import Scrubber  # noqa: E402
from ..errors import ApiError, CesyncError, ConfigError, PlanFileError  # noqa: E402
from ..escape import output  # noqa: E402
from ..render import FORMATS  # noqa: E402
from . import interrupts  # noqa: E402
from .logs import verbose_option  # noqa: E402

if TYPE_CHECKING:
    from ..core.plan import Plan

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK, EXIT_ERROR, EXIT_CHANGES, EXIT_INTERRUPTED = 0, 1, 2, 130


# --- the one output path -------------------------------------------------------------------------
#
# Everything a command prints or writes (plan text, Markdown and JSON, reports, JUnit and plan
# files, progress and error messages) goes through out(), err() or save(), each through the run's
# Scrubber (made with its root context), told every sensitive value before the first output. The
# command hands the same one to the other channels: retry lines (the client's notify), log lines
# (cli.logs), the comment body, and a repo's files (export, pull), refused rather than masked.
# tests/core/test_channels.py keeps the command modules from writing any other way.


def scrubber(ctx: click.Context | None = None) -> Scrubber:
    """This run's Scrubber, the root context's object; outside a run (no context) an empty one."""
    ctx = ctx or click.get_current_context(silent=True)
    return (ctx.find_object(Scrubber) if ctx else None) or Scrubber()


def err(message: str, **kw: Any) -> None:
    """A message on stderr, scrubbed and made inert (see above)."""
    click.echo(output(scrubber().scrub(message)), err=True, **kw)


def out(message: str, **kw: Any) -> None:
    """Everything a command prints goes through here: sensitive values never reach a terminal or
    log, and text from outside never drives one (escape.output: no terminal control, no line a
    CI runner reads as a command)."""
    click.echo(output(scrubber().scrub(message)), **kw)


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
            for line in exc.detail_lines() if isinstance(exc, ApiError) else []:
                err(f"  {line}")
            sys.exit(EXIT_ERROR)
        except (KeyboardInterrupt, click.exceptions.Abort):
            _leave_interrupted()
        except BrokenPipeError:
            _leave_output_closed()
        except click.exceptions.Exit:
            raise
        except click.ClickException:
            raise
        except Exception as exc:  # a bug: still no traceback unless asked for
            if "KeyboardInterrupt" in str(exc):  # pydantic-core reports a Ctrl-C inside a model build as SchemaError
                _leave_interrupted()
            if os.environ.get("CESYNC_DEBUG"):
                import traceback

                err(traceback.format_exc(), nl=False)  # an exception may quote a sensitive value: scrubbed as all output
            err(f"internal error: {type(exc).__name__}: {exc} (set CESYNC_DEBUG=1 for a traceback, and please report it)")
            sys.exit(EXIT_ERROR)

    return wrapper  # type: ignore[return-value]


dir_option = click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="The cesync repo.",
)


@contextlib.contextmanager
def _our_exit_codes() -> Iterator[None]:
    try:
        yield
    except (KeyboardInterrupt, click.exceptions.Abort):
        _leave_interrupted()
    except click.UsageError as exc:
        # click exits 2 for a bad option, which --detailed-exitcode means "changes present":
        # a misspelt flag in CI must read as an error, never as a plan with changes.
        exc.show()
        sys.exit(EXIT_ERROR)


def _leave_interrupted() -> NoReturn:
    """One line and exit 130. Ctrl-C does nothing from here: a second one (or the first, still
    pending in the interpreter) would otherwise turn the exit into a KeyboardInterrupt while
    it unwinds, and the process would die of SIGINT (-2) instead of exiting 130. (A Python
    no-op handler, not SIG_IGN, which processes started later would inherit.)"""
    import signal

    while True:
        try:
            signal.signal(signal.SIGINT, lambda signum, frame: None)
            break
        except KeyboardInterrupt:  # a second Ctrl-C, pending: the switch ran it first
            continue
        except ValueError:  # not the main thread: nothing to change
            break
    err("interrupted")
    sys.exit(EXIT_INTERRUPTED)


def _leave_output_closed() -> NoReturn:
    """The reader of stdout left (`cesync plan | head -1`): one line and exit 1, not an
    "internal error". The rest of the output, the final flush included, goes to /dev/null."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    with contextlib.suppress(OSError):
        err("error: the output was closed before it was all written (broken pipe)")
    sys.exit(EXIT_ERROR)


# Each command's module and the first line of its help, so that `cesync --help` and a
# command run import only what they use (tests/cli/test_cli_lazy.py keeps this table true).
MODULES = (
    "adopt",
    "ci",
    "core",
    "evaluate",
    "graph",
    "offline",
    "policy",
    "preview",
    "promote",
    "release",
    "serve",
    "sync",
    "teardown",
    "tools",
    "versions",
)
COMMANDS: dict[str, tuple[str, str]] = {
    "apply": ("core", "Make the app match the repo: creates, updates and (with --prune) deletes."),
    "completion": (
        "offline",
        "Print the shell completion script for bash, zsh or fish (source it from your shell's start-up file).",
    ),
    "comment": ("ci", "Keep one sticky plan comment per environment and app on the pull/merge request."),
    "destroy": (
        "teardown",
        "Delete every resource cesync owns in the environment's app (a retired environment): apply --destroy.",
    ),
    "diff": ("adopt", "Compare two live apps: what making TO like FROM's app as it runs now would change."),
    "emulator": ("serve", "Run the local CES emulator (export CES_EMULATOR_HOST, then --endpoint emulator)."),
    "eval": (
        "evaluate",
        "Run the repo's evaluations (evaluations/*.yaml) in the environment's app; exit 1 when any misses its thresholds.",
    ),
    "exec": ("tools", "Run one tool (id, TOOLSET/TOOL_ID or display name) and print its canonical output."),
    "export": ("adopt", "Write the whole app (settings, agents, guardrails, tools and the rest) as a cesync repo (adoption)."),
    "graph": ("graph", "Draw the app's resources and the references between them, in Mermaid, DOT or JSON."),
    "import-archive": ("adopt", "Convert a CES app export (zip or folder) into a cesync repo."),
    "convert-tools": ("sync", "Rewrite OpenAPI, connector and MCP tool files as the toolset files CES makes those tools from."),
    "fmt": ("sync", "Rewrite cesync.yaml and every resource file in one canonical layout, keeping comments."),
    "init": (
        "offline",
        "Scaffold a new repo: cesync.yaml, an example tool, the JSON Schemas its editor modelines name, .gitignore.",
    ),
    "matrix": ("ci", "List every (app folder, environment) under ROOT as JSON, for a CI matrix."),
    "policy": ("policy", "The repo's policy checks (the folder 'policies' in cesync.yaml names)."),
    "plan": ("core", "Show what apply would change in the app, with the etags seen."),
    "release": (
        "release",
        "Move a deployment's traffic to a new app version step by step (releases/ID.yaml), gated by evaluations.",
    ),
    "rollback": (
        "versions",
        "Show what restoring VERSION (an id from 'cesync versions') would change, then restore it (RestoreAppVersion).",
    ),
    "preview": ("preview", "Apply the repo to a throw-away app beside the environment's (APP-NAME), or --delete it."),
    "promote": ("promote", "Plan TO from exactly the commit FROM last applied (its applied record), in that commit's tree."),
    "pull": ("sync", "Write the app's state of managed resources back into the files that define them."),
    "schema": ("offline", "Write JSON Schemas for cesync.yaml and every kind's files."),
    "show": ("core", "Render a saved plan (text, json or markdown)."),
    "test": ("tools", "Run the tool tests in tests/*.yaml against the environment's app (--local: against the repo)."),
    "validate": ("offline", "Check every file offline; report each problem as file:line:col."),
    "versions": ("versions", "List the app's versions, newest first (make one with 'apply --snapshot')."),
}


class _Main(click.Group):
    """Ctrl-C in click's own work (parsing, prompts) exits 130 too, not with click's "Aborted!" and 1.

    A command's module is imported when the command is used, not on every start; the
    command list of --help comes from COMMANDS.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            known = COMMANDS.get(cmd_name)
            for module in [known[0]] if known else MODULES:  # not in the table: look everywhere
                importlib.import_module(f"{__name__}.{module}")
        command = self.commands.get(cmd_name)
        if command is not None and not any(p.name == "verbose" for p in command.params):
            command.params.append(verbose_option())
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's listing, from the table: no command module is imported to show it."""
        names = self.list_commands(ctx)
        commands = [(n, self.commands.get(n) or click.Command(n, help=COMMANDS[n][1])) for n in names]
        commands = [(n, c) for n, c in commands if not c.hidden]
        if commands:
            # The whole first paragraph, never cut to "...": it is the only help most read.
            with formatter.section("Commands"):
                formatter.write_dl([(n, " ".join((c.short_help or c.help or "").split("\n\n")[0].split())) for n, c in commands])

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        kwargs.setdefault("obj", Scrubber())  # the run's (see scrubber()): every subcommand's context shares it
        with _our_exit_codes():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        _fewer_collections()
        with _our_exit_codes():
            return super().invoke(ctx)


def _fewer_collections() -> None:
    """Run the cyclic garbage collector every 50,000 net allocations, not every 700.

    A plan allocates hundreds of thousands of dicts, lists and strings (parsed YAML and
    JSON) that live to the end, and almost none in cycles; at the default threshold the
    collector kept walking them: a seventh of plan's CPU at 1,000 tools, a quarter at
    10,000 (whose peak RSS grows by 4 MB). Reference counting frees everything else.
    """
    gc.set_threshold(50_000, *gc.get_threshold()[1:])


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]}, params=[verbose_option()])
@click.version_option(__version__, prog_name="cesync")
def main() -> None:
    """Manage Google Cloud CES apps as code (agents, tools, toolsets, guardrails, ...): validate, plan, apply."""


def run() -> NoReturn:
    """The ``cesync`` command (and ``python -m cesync.cli``): main, then the interpreter's own exit.

    A Ctrl-C on the way out of the command still means 130 and one line; from then on it is
    ignored (interrupts.ignore_interrupts), and the exit is never death by SIGINT
    (interrupts.forget_unhandled_interrupt).
    """
    sys.unraisablehook = interrupts.no_lost_interrupt(sys.unraisablehook)
    interrupted = False
    code: int | str | None = EXIT_OK
    try:
        main()
    except SystemExit as exc:
        code = exc.code
    except KeyboardInterrupt:  # a Ctrl-C on the way out of click, after the command's own handling
        interrupted = True
    code = interrupts.ignore_interrupts(code, interrupted, err)
    interrupts.forget_unhandled_interrupt()
    # What the run made stays out of the collections the interpreter makes as it ends: they
    # walk every object left (a 10k plan's millions: a quarter of a second) to find cycles the
    # end of the process frees all the same. atexit handlers (weakref.finalize) run before them.
    gc.freeze()
    sys.exit(code)  # sys.exit("message"): Python prints it and exits 1


def atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


# --- plan, show, apply ------------------------------------------------------------------------


def complete_env(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[click.shell_completion.CompletionItem]:
    """Shell completion of an environment's name: those of the cesync.yaml the command would read.

    Runs on every Tab press: reads one file, never raises (a completion that fails says nothing)."""
    from .. import yamlconfig
    from ..repo.loading import CONFIG_FILE
    from ..repo.repo import find_root

    try:
        root = find_root(Path(ctx.params.get("directory") or ".").resolve())
        config = yamlconfig.safe().load((root / CONFIG_FILE).read_text(encoding="utf-8"))
        names = [str(n) for n in config.get("environments") or {}]
    except Exception:
        return []
    return [click.shell_completion.CompletionItem(n) for n in names if n.startswith(incomplete)]


env_option = click.option(
    "--env", "env_name", help="The environment of cesync.yaml (or CESYNC_ENV).", shell_complete=complete_env
)


def _endpoint(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """--endpoint gets the same check as endpoint: in cesync.yaml (one function for both)."""
    if value is None:
        return None
    from ..repo.config import normalize_endpoint

    try:
        return normalize_endpoint(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


endpoint_option = click.option(
    "--endpoint",
    callback=_endpoint,
    envvar="CESYNC_ENDPOINT",
    help="Override the environment's endpoint (or CESYNC_ENDPOINT): 'embedded', 'emulator' (the one "
    "CES_EMULATOR_HOST names) or a URL; a loopback host:port means http://host:port.",
)
format_option = click.option(
    "--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True, help="How to show the plan."
)
target_option = click.option(
    "--target",
    "targets",
    multiple=True,
    help="Only these resources: ID or COLLECTION/ID (tools/ID, toolsets/ID, agents/ID, guardrails/ID, examples/ID, "
    "deployments/ID; app for the app's settings), repeatable; the result says it is partial.",
)


def var_options(fn: F) -> F:
    """--var NAME=VALUE and --var-file FILE, for every command that renders the repo."""
    fn = click.option(
        "--var-file",
        "var_files",
        multiple=True,
        type=click.Path(dir_okay=False, path_type=Path),
        help="A YAML or JSON file of NAME: value pairs for ${NAME} (repeatable; later ones win, --var wins over them).",
    )(fn)
    return click.option(
        "--var",
        "var_pairs",
        multiple=True,
        metavar="NAME=VALUE",
        help="Set ${NAME} for this run; wins over cesync.yaml and the process environment (repeatable).",
    )(fn)


def cli_vars(pairs: tuple[str, ...], files: tuple[Path, ...]) -> dict[str, str]:
    """The values of --var-file (in order) then --var; a malformed one is an error."""
    from ..core.yamlfile import Document, load_text, read_text
    from ..repo.templating import VAR_NAME as VAR_NAME_RE

    out: dict[str, str] = {}
    for path in files:
        text = read_text(path, str(path))
        doc = load_text(text, str(path)) if isinstance(text, str) else text
        if not isinstance(doc, Document):
            raise CesyncError(f"--var-file: {doc}")
        data = doc.data
        if not isinstance(data, dict):
            raise CesyncError(f"--var-file {path}: expected a mapping of NAME: value")
        for name, value in data.items():
            if not VAR_NAME_RE.match(str(name)) or isinstance(value, (dict, list)) or value is None:
                raise CesyncError(f"--var-file {path}: {name!r} must be a NAME (letters, digits, _) with a text value")
            out[str(name)] = str(value).lower() if isinstance(value, bool) else str(value)
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not VAR_NAME_RE.match(name):
            raise CesyncError(f"--var {pair!r}: write NAME=VALUE (NAME of letters, digits and _)")
        out[name] = value
    return out


def print_plan(plan: Plan, fmt: str) -> None:
    """The plan on stdout."""
    from ..render import render, use_color

    out(render(plan, fmt, color=use_color(sys.stdout.isatty(), os.environ)), nl=False)


def save(path: Path, text: str) -> None:
    """A report or plan file (JUnit, plan --out), scrubbed like the terminal."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, scrubber().scrub(text))


def load_plan(path: Path) -> Plan:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PlanFileError(f"no plan file {path}: 'cesync plan --out {path}' saves one") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanFileError(f"cannot read plan file {path}: {getattr(exc, 'strerror', None) or exc}") from None
    from ..core.plan import Plan

    return Plan.from_json(text, str(path))


# Start-up is over (command modules load later, inside _Main's own interrupt handling).
end_startup(_handler_before_startup)
