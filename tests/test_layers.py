"""The layer rule (docs/architecture.md, "The layers"): a module imports only its own layer
and those above it; the emulator imports nothing of cesync but the API snapshot, the
field-behaviour table and the subset matcher; the table imports only the snapshot, the
matcher nothing of cesync.

Every ``import`` of every module in src/cesync is read with ``ast`` (including those inside
functions and under ``TYPE_CHECKING``: a type still ties the layers together), so a new
module or a new import that breaks the rule fails here with the offending line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

SHARED, API, CORE, IO, PIPELINE, COMMANDS = range(6)
LAYER_NAMES = {SHARED: "shared", API: "API", CORE: "pure core", IO: "I/O", PIPELINE: "pipelines", COMMANDS: "commands"}
EMULATOR = -1  # beside the layers: a separate server

# Module (or package) -> layer; the longest matching prefix decides.
LAYERS: dict[str, int] = {
    "cesync": SHARED,  # the package itself: version, Ctrl-C during start-up
    "cesync.errors": SHARED,
    "cesync.api": API,
    "cesync.models": API,
    "cesync.core": CORE,
    "cesync.render": CORE,
    "cesync.tooltests.schema": CORE,
    "cesync.tooltests.match": CORE,
    "cesync.tooltests.report": CORE,
    "cesync.tooltests": IO,  # run.py runs tools through the client; the package re-exports it
    "cesync.repo": IO,
    "cesync.client": IO,
    "cesync.sync": IO,
    "cesync.forge": IO,
    "cesync.pipeline": PIPELINE,
    "cesync.cli": COMMANDS,
    "cesync.emulator": EMULATOR,
}

# The only cesync modules the emulator may import: its own, the published API, the
# field-behaviour table (cited facts about the API, which the emulator must enforce as CES
# does; it imports nothing but the snapshot, so no reading of cesync's comes with it), and
# the subset matcher (golden tool responses; JSON in, differences out, nothing of cesync).
EMULATOR_MAY_IMPORT = ("cesync.emulator", "cesync.api.descriptors", "cesync.api.behaviour", "cesync.core.subset")
BEHAVIOUR_TABLE = "cesync.api.behaviour"
BEHAVIOUR_TABLE_MAY_IMPORT = ("cesync.api.descriptors",)
SUBSET_MATCHER = "cesync.core.subset"
# The layers that may start the emulator (client/connect.py's embedded endpoint, `cesync emulator`).
EMULATOR_IMPORTED_FROM = IO

# Libraries that do I/O: the API and the pure core never use them.
IO_LIBRARIES = ("httpx", "google.auth", "click", "tenacity", "socket", "subprocess", "uvicorn", "starlette")

# (importer, imported): each exception with its reason.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("cesync.api.kinds", "cesync.core.documents"): "a tool's server default names the function its Python code defines",
    ("cesync.tooltests.report", "cesync.tooltests.run"): "the report renders run's results",
}


def layer_of(module: str) -> int:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in LAYERS:
            return LAYERS[prefix]
    raise KeyError(
        f"{module} is in no layer: add it to LAYERS in tests/test_layers.py (and to the layers of docs/architecture.md)"
    )


def _module_name(path: Path) -> tuple[str, bool]:
    parts = path.relative_to(SRC).with_suffix("").parts
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import in the file, relative ones resolved; ``from X import y``
    counts as ``X.y`` when y is a module, else as X."""
    module, is_package = _module_name(path)
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                is_module = (SRC / submodule.replace(".", "/")).with_suffix(".py").exists() or (
                    SRC / submodule.replace(".", "/")
                ).is_dir()
                found.append((node.lineno, submodule if is_module else target))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.lineno, node.args[0].value))
    return found


def violation(importer: str, imported: str) -> str | None:
    """Why ``importer`` may not import ``imported``, or None."""
    if (importer, imported) in EXCEPTIONS:
        return None
    mine = layer_of(importer)
    if not imported.startswith("cesync"):
        if mine in (API, CORE) and any(imported == lib or imported.startswith(lib + ".") for lib in IO_LIBRARIES):
            return f"the {LAYER_NAMES[mine]} layer does no I/O, so it does not import {imported}"
        return None
    theirs = layer_of(imported)
    if importer == BEHAVIOUR_TABLE and imported not in BEHAVIOUR_TABLE_MAY_IMPORT:
        return "the field-behaviour table holds cited facts only (the emulator reads it): it imports only the snapshot"
    if importer == SUBSET_MATCHER:
        return "the subset matcher is shared with the emulator: it imports nothing of cesync"
    if mine == EMULATOR:
        if not any(imported == m or imported.startswith(m + ".") for m in EMULATOR_MAY_IMPORT):
            return (
                "the emulator imports only itself, cesync.api.descriptors and cesync.api.behaviour: "
                "it must not share our reading of the API"
            )
        return None
    if theirs == EMULATOR:
        if mine < EMULATOR_IMPORTED_FROM:
            return f"the {LAYER_NAMES[mine]} layer does not start the emulator"
        return None
    if theirs > mine:
        return f"a {LAYER_NAMES[mine]} module imports the {LAYER_NAMES[theirs]} layer below it"
    return None


MODULES = sorted(p for p in (SRC / "cesync").rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(SRC)) for p in MODULES])
def test_a_module_imports_only_its_layer_and_those_above(path: Path) -> None:
    importer, _ = _module_name(path)
    offending = [
        f"{path.relative_to(SRC.parent)}:{line}: {importer} imports {imported}: {why}"
        for line, imported in imports_of(path)
        if (why := violation(importer, imported))
    ]
    assert not offending, "\n".join(offending)


def test_every_exception_is_still_needed() -> None:
    """An exception nobody uses any more is removed, so the list says what is true."""
    used = {(_module_name(p)[0], imported) for p in MODULES for _, imported in imports_of(p) if imported.startswith("cesync")}
    assert set(EXCEPTIONS) <= used, set(EXCEPTIONS) - used


@pytest.mark.parametrize(
    ("importer", "imported", "expected"),
    [
        ("cesync.core.plan", "cesync.api.kinds", None),
        ("cesync.core.plan", "cesync.errors", None),
        ("cesync.core.plan", "cesync.core.diff", None),
        ("cesync.pipeline.workflow", "cesync.client.api", None),
        ("cesync.cli.core", "cesync.pipeline.workflow", None),
        ("cesync.client.connect", "cesync.emulator", None),
        ("cesync.emulator.wire", "cesync.api.descriptors", None),
        ("cesync.emulator.wire", "cesync.api.behaviour", None),
        ("cesync.api.behaviour", "cesync.api.descriptors", None),
        ("cesync.emulator.golden", "cesync.core.subset", None),
        ("cesync.tooltests.match", "cesync.core.subset", None),
        ("cesync.core.subset", "cesync.errors", "imports nothing of cesync"),
        ("cesync.emulator.golden", "cesync.core.diff", "emulator imports only itself"),
        ("cesync.api.behaviour", "cesync.api.kinds", "cited facts only"),
        ("cesync.api.behaviour", "cesync.models", "cited facts only"),
        ("cesync.core.plan", "cesync.client.api", "pure core module imports the I/O layer"),
        ("cesync.core.diff", "cesync.cli", "pure core module imports the commands layer"),
        ("cesync.core.diff", "httpx", "does no I/O"),
        ("cesync.api.kinds", "cesync.repo.loading", "API module imports the I/O layer"),
        ("cesync.sync.export", "cesync.pipeline.workflow", "I/O module imports the pipelines layer"),
        ("cesync.repo.repo", "cesync.cli", "I/O module imports the commands layer"),
        ("cesync.core.plan", "cesync.emulator.store", "does not start the emulator"),
        ("cesync.emulator.wire", "cesync.models", "emulator imports only itself"),
        ("cesync.emulator.store", "cesync.core.normalize", "emulator imports only itself"),
        ("cesync.emulator.app", "cesync.core.checks", "emulator imports only itself"),
        ("cesync.emulator.app", "cesync.api.kinds", "emulator imports only itself"),
    ],
)
def test_the_rule(importer: str, imported: str, expected: str | None) -> None:
    why = violation(importer, imported)
    assert (why is None) if expected is None else (why is not None and expected in why), why


def test_a_module_in_no_layer_is_named() -> None:
    with pytest.raises(KeyError, match=r"cesync_other\.x is in no layer"):
        layer_of("cesync_other.x")


# --- pure in fact, not only by its imports --------------------------------------------------------

# What the API, the pure core and the renderers never do themselves: read the process environment,
# touch files, or read a clock. The pipeline reads these and hands the values in.
PURE = (API, CORE)
IMPURE_CALLS = {
    "os.environ": "reads the process environment",
    "os.getenv": "reads the process environment",
    "os.listdir": "lists a folder",
    "os.walk": "walks a folder",
    "os.stat": "reads a file's metadata",
    "open": "opens a file",
    ".read_text": "reads a file",
    ".read_bytes": "reads a file",
    ".write_text": "writes a file",
    ".write_bytes": "writes a file",
    ".iterdir": "lists a folder",
    ".rglob": "lists a folder",
    ".glob": "lists a folder",
    ".stat": "reads a file's metadata",
    ".exists": "asks the file system",
    ".is_file": "asks the file system",
    ".is_dir": "asks the file system",
    "datetime.now": "reads the clock",
    "datetime.utcnow": "reads the clock",
    "date.today": "reads the clock",
    "time.time": "reads the clock",
    "time.time_ns": "reads the clock",
}
# module -> (what it may do, why); an entry no longer needed fails, so the list only shrinks.
IMPURE_EXCEPTIONS: dict[str, tuple[frozenset[str], str]] = {
    "cesync.api.descriptors": (
        frozenset({".read_bytes", ".read_text"}),
        "reads the API snapshot cesync ships (package data, never the user's files), once",
    ),
    "cesync.core.yamlfile": (
        frozenset({".stat", ".read_bytes"}),
        "read_text, the bounded file reader the repo and tooltests/schema.py (a pure-core module) load "
        "through; it moves to repo/ with tooltests/schema.py's loader",
    ),
    "cesync.tooltests.schema": (
        frozenset({".glob", ".is_dir"}),
        "finds and reads a repo's tool test files beside their format: the loader moves to the I/O layer",
    ),
}


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else f".{node.attr}"
    return ""


def impure_uses(path: Path) -> list[tuple[int, str]]:
    """(line, what) for each environment, file or clock access in the module."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Attribute | ast.Name):
            name = _dotted(node)
            for what in IMPURE_CALLS:
                if what.startswith("."):
                    if isinstance(node, ast.Attribute) and f".{node.attr}" == what:
                        found.append((node.lineno, what))
                elif name == what or name.endswith("." + what):
                    found.append((node.lineno, what))
    return sorted(set(found))


PURE_MODULES = [p for p in MODULES if layer_of(_module_name(p)[0]) in PURE]


@pytest.mark.parametrize("path", PURE_MODULES, ids=[str(p.relative_to(SRC)) for p in PURE_MODULES])
def test_the_pure_layers_read_no_environment_file_or_clock(path: Path) -> None:
    module, _ = _module_name(path)
    allowed = IMPURE_EXCEPTIONS.get(module, (frozenset(), ""))[0]
    offending = [
        f"{path.relative_to(SRC.parent)}:{line}: {module} {IMPURE_CALLS[what]} ({what}): take the value as a parameter"
        for line, what in impure_uses(path)
        if what not in allowed
    ]
    assert not offending, "\n".join(offending)


def test_every_purity_exception_is_still_needed() -> None:
    by_module = {_module_name(p)[0]: {what for _, what in impure_uses(p)} for p in PURE_MODULES}
    stale = {m: sorted(allowed - by_module.get(m, set())) for m, (allowed, _) in IMPURE_EXCEPTIONS.items()}
    assert not any(stale.values()), stale


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import os\nx = os.environ.get('A')\n", ["os.environ"]),
        ("import datetime\nx = datetime.datetime.now()\n", ["datetime.now"]),
        ("from pathlib import Path\nx = Path('a').read_text()\n", [".read_text"]),
        ("x = open('a')\n", ["open"]),
        ("def f(clock):\n    return clock()\n", []),
    ],
)
def test_the_purity_rule(tmp_path: Path, source: str, expected: list[str]) -> None:
    path = tmp_path / "m.py"
    path.write_text(source)
    assert [what for _, what in impure_uses(path)] == expected
