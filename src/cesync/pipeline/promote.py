"""Promotion by commit: plan one environment from exactly the commit another last applied.

What is approved for prod must be what dev runs, not the working tree and not a
comparison of two live apps: ``cesync promote --from dev --to prod`` reads the commit dev's
applied record names, lays that commit's tree out in a temporary folder (``git archive``:
nothing in the checkout or its ``.git`` changes), renders it with prod's variables and
plans prod from it. The plan names the commit; ``cesync apply PLAN`` lays the same commit
out again and applies that plan and nothing else.
"""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ..client.api import CesClient
from ..errors import CesyncError, NotFound
from ..repo.environments import EnvTarget

__all__ = ["COMMIT_RE", "applied_commit", "check_reviewed", "checkout_root", "commit_tree"]

COMMIT_RE = re.compile(r"^[0-9a-f]{40}\Z")  # a full sha-1 commit id; anything else from a server is refused
MAX_ARCHIVE = 200 * 1024 * 1024  # bytes of the commit's folder, as import-archive's limit


async def applied_commit(client: CesClient, env: EnvTarget, owner: str = "", ignored: list[str] | None = None) -> str:
    """The commit cesync last applied to env's app, from the app's own trusted record of it
    (sync.record.record_heads: an untrusted record is named in ignored and passed over); versions
    apply --snapshot made (no record in them) are read by their names, unless records are sealed."""
    from ..core.record import parse_record
    from ..sync.record import KIND_OF, current_key, distrust, ignored_note, version_heads

    key = current_key()
    legacy = ""
    heads = version_heads(client, env.parent)
    try:
        async with contextlib.aclosing(heads):  # a return inside closes the list in this loop
            async for version in heads:  # newest first, without snapshots
                record = parse_record(version, KIND_OF)
                if record is not None and record.env == env.name and (why := distrust(record, key)):
                    if ignored is not None:
                        ignored.append(ignored_note(record, why))
                elif record is not None and record.env == env.name and record.namespace == owner:
                    if record.dirty or not COMMIT_RE.match(record.commit):
                        raise CesyncError(
                            f"'{env.name}' has no record of an applied commit ({env.parent}): its last apply was not of a "
                            "commit (uncommitted changes, or outside git); apply a commit to it first"
                        )
                    return record.commit
                found = _RECORD_RE.search(str(version.get("description", "")))
                if not legacy and not key and found and found.group(1) == env.name:
                    legacy = found.group(2)
    except NotFound:
        raise CesyncError(f"'{env.name}' has no app ({env.parent}): nothing was applied to it to promote") from None
    if legacy:
        return legacy  # any record outranks a version apply --snapshot made before records existed
    raise CesyncError(
        f"'{env.name}' has no record of an applied commit ({env.parent}): apply to it with cesync from a git "
        "checkout first; its record names the commit to promote"
    )


_RECORD_RE = re.compile(r"to (\S+) at .*?, commit ([0-9a-f]{40})(?! with uncommitted)")


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=120, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise CesyncError(f"git could not be run in {cwd}: {exc}") from None


def checkout_root(directory: Path) -> tuple[Path, Path]:
    """(top of the git checkout holding directory, directory relative to it)."""
    found = _git(directory, "rev-parse", "--show-toplevel")
    if found.returncode != 0:
        raise CesyncError(f"{directory} is not in a git checkout: promotion plans from a commit")
    top = Path(found.stdout.decode().strip()).resolve()
    return top, directory.resolve().relative_to(top)


def check_reviewed(top: Path, commit: str, branch: str) -> None:
    """Refuse commit unless the reviewed branch (its local or origin's copy) holds it: a record names
    the commit promote lays out, and a record is only as trustworthy as whoever could write it."""
    candidates = (f"refs/heads/{branch}", f"refs/remotes/origin/{branch}")
    refs = [r for r in candidates if _git(top, "rev-parse", "-q", "--verify", r).returncode == 0]
    if not refs:
        raise CesyncError(
            f"the reviewed branch '{branch}' (cesync.yaml promote.reviewedBranch) is not in this checkout: fetch it "
            "(in CI, check out with the whole history, e.g. actions/checkout with fetch-depth: 0)"
        )
    if not any(_git(top, "merge-base", "--is-ancestor", commit, ref).returncode == 0 for ref in refs):
        raise CesyncError(
            f"commit {commit[:12]} is not on the reviewed branch '{branch}' ({', '.join(refs)}): only reviewed commits "
            "are promoted; merge it first (cesync.yaml promote.reviewedBranch names the branch)"
        )


@contextlib.contextmanager
def commit_tree(directory: Path, commit: str, reviewed_branch: str | None = None) -> Iterator[Path]:
    """The repo folder (directory) as it is at commit, in a temporary folder removed afterwards.

    reviewed_branch: refuse a commit that branch does not hold (check_reviewed)."""
    if not COMMIT_RE.fullmatch(commit):
        raise CesyncError(f"{commit!r} is not a full commit id (40 hex digits)")
    top, relative = checkout_root(directory)
    if _git(top, "cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
        raise CesyncError(
            f"commit {commit[:12]} is not in this checkout: fetch it (in CI, check out with the whole history, "
            "e.g. actions/checkout with fetch-depth: 0)"
        )
    if reviewed_branch is not None:
        check_reviewed(top, commit, reviewed_branch)
    path = "." if str(relative) == "." else relative.as_posix()
    archive = _git(top, "archive", "--format=tar", commit, "--", path)
    if archive.returncode != 0:
        raise CesyncError(f"git archive of {commit[:12]}:{path} failed: {archive.stderr.decode(errors='replace').strip()}")
    if len(archive.stdout) > MAX_ARCHIVE:
        raise CesyncError(f"the repo folder at {commit[:12]} is over {MAX_ARCHIVE // 2**20} MB")
    with tempfile.TemporaryDirectory(prefix="cesync-promote-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            _extract(tar, Path(tmp))
        folder = Path(tmp) / relative
        if not (folder / "cesync.yaml").is_file():
            raise CesyncError(f"{path} has no cesync.yaml at commit {commit[:12]}")
        yield folder


def _extract(tar: tarfile.TarFile, dest: Path) -> None:
    """Regular files and folders only, each inside dest: a commit's links and devices are not
    laid out (the loader refuses links that leave the repo; here they are not even made)."""
    for member in tar.getmembers():
        target = (dest / member.name).resolve()
        if not target.is_relative_to(dest.resolve()):
            raise CesyncError(f"the commit holds a path outside its folder: {member.name!r}")
        if member.isdir():
            target.mkdir(parents=True, exist_ok=True)
        elif member.isfile():
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            assert source is not None
            target.write_bytes(source.read())
