"""cesync's one file writer: a new folder all at once, or not at all (write_tree), and edits to the
files of an existing one (write_files); each text is written to a temporary file and renamed into
place, byte for byte (its own line endings), so nothing is ever half-written."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from ..errors import CesyncError

__all__ = ["in_git_dir", "resolved_below", "write_files", "write_tree"]

GIT_DIR = ".git"


def in_git_dir(path: Path, root: Path, *, resolved: bool = False) -> bool:
    """path (resolved) lies in a .git folder or is a .git file below root: git's own files, never
    repo content. Its config can hold the checkout's token (actions/checkout's extraheader), and
    what is written there (core.fsmonitor, hooks) is code git runs. resolved: both paths are
    already resolved (resolving walks every component with a system call, per include)."""
    try:
        parts = (path.relative_to(root) if resolved else path.resolve().relative_to(root.resolve())).parts
    except ValueError:
        return False
    return any(part.lower() == GIT_DIR for part in parts)


def resolved_below(path: Path, root: Path) -> Path:
    """path.resolve(), for a resolved root and a path written below it (an include: root/tools/../x).

    resolve() looks at every folder from / down, with Python's work for each, for every include.
    Below a resolved root only the parts after it can be links: they are walked from root, one
    lstat each ('..' is the parent, as resolve() takes it once the part before it is no link), and
    at the first link or part that cannot be looked at the whole path is resolved as before.
    """
    text, top = str(path), str(root)
    if top == "/" or not (text.startswith(top) and text[len(top) : len(top) + 1] == "/"):
        return path.resolve()
    current = top
    for part in text[len(top) + 1 :].split("/"):
        if part == "..":
            current = os.path.dirname(current)  # a resolved folder's parent: no link on the way
            continue
        current = f"{current}/{part}"
        try:
            link = stat.S_ISLNK(os.lstat(current).st_mode)
        except OSError:
            link = True  # resolve() decides what a missing or unreadable part gives
        if link:
            return path.resolve()
    return Path(current)


def write_tree(
    target: Path, files: dict[str, str], *, force: bool = False, verify: Callable[[Path], None] | None = None
) -> list[str]:
    """Write ``files`` (relative path -> text) into ``target``.

    Everything is written to a temporary folder next to ``target`` first, then each
    top-level entry is moved into place; a failure puts the old entries back. A
    non-empty ``target`` is refused unless ``force``: then the entries the export
    writes (``tools/``, ``cesync.yaml``, ...) are replaced and anything else in the
    folder (``.git``, a README) is kept. Returns the top-level entries written.
    """
    target = target.resolve()
    if target.exists() and not target.is_dir():
        raise CesyncError(f"{target} exists and is not a folder")
    if target.is_dir() and any(target.iterdir()) and not force:
        raise CesyncError(f"{target} is not empty; choose an empty folder or pass --force to replace what cesync writes")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.cesync-", dir=target.parent))
    trash = staging / ".replaced"
    moved: list[tuple[Path, Path | None]] = []  # (new entry in target, old entry in trash)
    try:
        new = staging / "new"
        for rel, text in files.items():
            path = (new / rel).resolve()
            if not path.is_relative_to(new.resolve()) or rel.startswith("/"):
                raise CesyncError(f"refusing to write {rel!r}: outside the export folder")
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="") as fh:  # keep the text byte for byte
                fh.write(text)
        if verify is not None:
            verify(new)
        target.mkdir(exist_ok=True)
        trash.mkdir()
        entries = sorted(p.name for p in new.iterdir())
        for name in entries:
            dest, old = target / name, None
            if dest.exists() or dest.is_symlink():
                old = trash / name
                os.replace(dest, old)
            moved.append((dest, old))
            os.replace(new / name, dest)
        return entries
    except BaseException:
        for dest, old in reversed(moved):  # undo: nothing half-written stays behind
            if dest.is_dir() and not dest.is_symlink():
                shutil.rmtree(dest, ignore_errors=True)
            elif dest.exists():
                dest.unlink()
            if old is not None:
                os.replace(old, dest)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def write_files(root: Path, files: Mapping[str, str | None]) -> None:
    """Edits to files of an existing folder (``None``: delete the file): every new text to a temporary
    file beside its target first, then each renamed into place; deletions last. A path that resolves
    outside ``root`` (a symlinked folder or file) is refused before anything is written."""
    staged: list[tuple[Path, Path]] = []
    inside = root.resolve()
    try:
        for rel, text in sorted(files.items()):
            if text is None:
                continue
            path = root / rel
            if not path.resolve().is_relative_to(inside):
                raise CesyncError(
                    f"{rel}: resolves outside the repo (a symlinked folder or file); pull writes only inside "
                    "the repo. Nothing was written"
                )
            if in_git_dir(path, inside):
                raise CesyncError(f"{rel}: inside .git; cesync never writes git's own files. Nothing was written")
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.cesync-tmp")
            tmp.unlink(missing_ok=True)  # a planted symlink by that name would take the write elsewhere
            with open(tmp, "x", encoding="utf-8", newline="") as fh:
                fh.write(text)
            staged.append((tmp, path))
    except BaseException:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        raise
    for tmp, path in staged:
        os.replace(tmp, path)
    for rel, text in files.items():
        if text is None:
            (root / rel).unlink(missing_ok=True)
