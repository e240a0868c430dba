"""Started by sandbox.py as ``python -I <this file>``: loads this folder as the package
``sandbox_runner`` by its path and runs it.

Under ``-I`` the script's folder is not put on sys.path (nor PYTHON* variables, nor the
user's site; checked on Python 3.10 to 3.13), and neither is the folder above it, which
holds the emulator: the runner's parts are found through the package's own path, and the
tool's code cannot import them, the emulator or cesync by a name on sys.path.
"""

import importlib
import importlib.util
import os
import sys
from types import ModuleType

PACKAGE = "sandbox_runner"


def load() -> ModuleType:
    """Every part, imported now: in namespaces the host's files (this folder too) are hidden before the code runs."""
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(PACKAGE, os.path.join(here, "__init__.py"), submodule_search_locations=[here])
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the sandbox runner from {here}")
    package = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = package
    spec.loader.exec_module(package)
    return importlib.import_module(f"{PACKAGE}.main")


if __name__ == "__main__":
    load().main()
