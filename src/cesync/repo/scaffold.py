"""`cesync init`: the files of a new repo."""

from __future__ import annotations

from pathlib import Path

from ..errors import CesyncError
from .jsonschema import render_schemas

__all__ = ["write_scaffold"]

CONFIG = """\
# yaml-language-server: $schema=schemas/cesync.schema.json
version: 1
defaults:
  vars: {{}}
environments:
  # The embedded emulator: state in .cesync/local.sqlite, no Google project needed.
  local:
    project: local
    location: us
    app: {app}
    endpoint: embedded
  # A real environment:
  # prod:
  #   project: my-project
  #   location: us
  #   app: {app}
# apply refuses a plan that deletes more than maxChangeFraction of the managed resources (renames
# count: what can lose data) or updates more than maxUpdateFraction of them, once there are at least
# minResources; --allow-mass-change lets one reviewed plan through.
safety:
  maxChangeFraction: 0.3
  maxUpdateFraction: 0.8
  minResources: 10
"""

TOOL = """\
# yaml-language-server: $schema=../schemas/tool.schema.json
# One tool per file; the tool id is the file name (or set `id:`).
pythonFunction:
  name: greet
  pythonCode: |
    def greet(name: str) -> dict:
        \"\"\"Greet someone by name.\"\"\"
        return {{"greeting": f"Hello, {{name}}!"}}
"""

GITIGNORE = ".cesync/\nplan.json\n"


def write_scaffold(directory: Path, app: str) -> list[Path]:
    """Create the files; refuse to overwrite anything that exists."""
    files = {
        directory / "cesync.yaml": CONFIG.format(app=app),
        directory / "tools" / "greet.yaml": TOOL.format(),
        directory / ".gitignore": GITIGNORE,
        # The modelines above name these: editors check and complete the files as you type.
        **{directory / "schemas" / name: text for name, text in render_schemas().items()},
    }
    taken = [str(p) for p in files if p.exists()]
    if taken:
        raise CesyncError(f"not overwriting existing files: {', '.join(taken)}")
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return list(files)
