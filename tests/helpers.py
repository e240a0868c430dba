"""Small builders shared by the tests."""

from __future__ import annotations

import shutil
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"


def make_repo(tmp: Path, files: dict[str, str | bytes], base: str = "minimal") -> Path:
    """A copy of a fixture repo with files added or replaced."""
    root = tmp / "repo"
    shutil.copytree(FIXTURES / base, root)
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root
