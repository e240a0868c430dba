"""Tests mirror the code: every package of src/cesync has its tests/<package>/ with tests in it,
and no test file is left at the top level unless its subject is (a module of cesync itself,
or the whole product)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = sorted(p.name for p in (ROOT / "src" / "cesync").iterdir() if (p / "__init__.py").is_file())
# Top-level test files: a top-level module's (cesync/errors.py), or about the whole code base or product.
TOP_LEVEL = {
    "test_anchors.py": "every module's patterns",
    "test_errors.py": "cesync/errors.py",
    "test_escape.py": "cesync/escape.py",
    "test_yamlconfig.py": "cesync/yamlconfig.py",
    "test_layers.py": "every module's imports",
    "test_modules.py": "every module's size and YAML() setup",
    "test_registry_leaks.py": "every module's kind tests and kind tables",
    "test_registry_guide.py": "docs/contributing/adding-a-kind.md, followed across the code base",
    "test_layout.py": "this layout",
    "test_strategies.py": "tests/strategies.py",
    "test_gitops.py": "the whole product, as a team runs it",
    "test_gitops_promises.py": "the whole product, as a team runs it",
    "test_whole_app_e2e.py": "the whole product, against Google's client",
    "test_release.py": "the package as built from a tag and installed apart from the source",
}


def test_every_package_has_its_tests_folder() -> None:
    assert PACKAGES
    missing = [p for p in PACKAGES if not any((ROOT / "tests" / p).glob("test_*.py"))]
    assert not missing, f"no tests/<package>/test_*.py for: {', '.join(missing)}"
    assert all((ROOT / "tests" / p / "__init__.py").is_file() for p in PACKAGES)


def test_no_test_file_is_left_at_the_top_level() -> None:
    stray = sorted(p.name for p in (ROOT / "tests").glob("test_*.py") if p.name not in TOP_LEVEL)
    assert not stray, f"move these to tests/<package>/ of their subject (or list them in TOP_LEVEL with why): {stray}"
