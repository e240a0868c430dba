"""The repo's policy folder (``policies:`` in cesync.yaml): its files read, checked and compiled.

Each ``*.yaml`` file there is a core.policy.PolicyFile; a file that is not valid YAML or not
a policy file is a Problem at its file:line:col, all of them reported at once."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from ..api.jsonvalue import has_path
from ..core.policy import CompiledRule, PolicyFile, compile_rules
from ..core.yamlfile import Document, load_text, read_text
from ..errors import ConfigError, Problem

__all__ = ["Policies", "load_policies"]


class Policies:
    """The files of the folder and their rules compiled (empty when cesync.yaml names no folder)."""

    def __init__(self, files: list[tuple[str, PolicyFile]], rules: list[CompiledRule]) -> None:
        self.files = files
        self.rules = rules

    def __bool__(self) -> bool:
        return bool(self.rules)


def load_policies(root: Path, folder: str | None) -> Policies:
    if not folder:
        return Policies([], [])
    base = root / folder
    if not base.is_dir():
        raise ConfigError(
            [Problem("cesync.yaml", 1, 1, f"policies: {folder!r} is not a folder of the repo; create it or fix the name")]
        )
    problems: list[Problem] = []
    files: list[tuple[str, PolicyFile]] = []
    resolved_root = root.resolve()
    for path in sorted(p for p in base.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file()):
        display = str(path.relative_to(root))
        text = read_text(path, display, root=resolved_root)
        doc = load_text(text, display) if isinstance(text, str) else text
        if isinstance(doc, Problem):
            problems.append(doc)
            continue
        parsed = _parse(doc, problems)
        if parsed is not None:
            files.append((display, parsed))
    if problems:
        raise ConfigError(problems)
    return Policies(files, compile_rules(files))


def _parse(doc: Document, problems: list[Problem]) -> PolicyFile | None:
    if not isinstance(doc.data, dict):
        problems.append(doc.problem((), "a policy file is a mapping with 'rules' (and 'tests')"))
        return None
    try:
        return PolicyFile.model_validate(doc.data)
    except ValidationError as exc:
        for e in exc.errors():
            loc = tuple(p for p in e["loc"] if isinstance(p, (str, int)))
            while loc and not has_path(doc.data, loc):  # a missing key: point at the mapping that lacks it
                loc = loc[:-1]
            problems.append(doc.problem(loc, _said(e["msg"], e["loc"])))
        return None


def _said(msg: str, loc: tuple[object, ...]) -> str:
    where = ".".join(str(p) for p in loc)
    return f"{where}: {msg.removeprefix('Value error, ')}" if where else msg.removeprefix("Value error, ")
