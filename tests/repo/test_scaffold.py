"""init and export write editor modelines whose schemas exist; schema --check tells missing from stale."""

from __future__ import annotations

import re
from pathlib import Path

from cesync.api.kinds import KINDS
from cesync.api.resource import Resource
from cesync.repo.jsonschema import render_schemas
from cesync.repo.scaffold import write_scaffold
from cesync.sync.export import export_repo
from tests.pipeline.test_pull import cli

MODELINE = re.compile(r"^# yaml-language-server: \$schema=(\S+)$", re.MULTILINE)


def modelines_resolve(root: Path, files: list[Path]) -> int:
    """How many modelines there are; each must name a file that exists and is the current schema."""
    current = render_schemas()
    count = 0
    for path in files:
        for target in MODELINE.findall(path.read_text()):
            resolved = (path.parent / target).resolve()
            assert resolved.is_file(), f"{path}: {target} does not resolve"
            assert resolved.read_text() == current[resolved.name]
            count += 1
    return count


def test_init_writes_the_schemas_its_modelines_name(tmp_path: Path) -> None:
    written = write_scaffold(tmp_path, "my-app")
    assert modelines_resolve(tmp_path, [p for p in written if p.suffix == ".yaml"]) == 2
    assert cli("schema", "--check", "--out", str(tmp_path / "schemas")).exit_code == 0
    assert cli("validate", "--dir", str(tmp_path)).exit_code == 0
    fmt = cli("fmt", "--check", "--dir", str(tmp_path))  # a fresh repo passes the cesync-fmt hook
    assert fmt.exit_code == 0, fmt.output


def test_exported_repo_modelines_resolve(tmp_path: Path) -> None:
    resources = [
        Resource(KINDS["tool"], "t", {"name": "P/tools/t", "clientFunction": {"name": "f"}}),
        Resource(KINDS["toolset"], "s", {"name": "P/toolsets/s", "mcpToolset": {"serverAddress": "https://x.example"}}),
    ]
    exported = export_repo(resources, parent="P", variables={}, urls={}, config_text="version: 1\n")
    for rel, text in exported.files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    yamls = [tmp_path / rel for rel in exported.files if rel.startswith(("tools/", "toolsets/"))]
    assert modelines_resolve(tmp_path, yamls) == 2


def test_schema_check_says_missing_then_stale(tmp_path: Path) -> None:
    out = tmp_path / "schemas"
    fresh = cli("schema", "--check", "--out", str(out))
    assert fresh.exit_code == 1 and "missing JSON Schemas" in fresh.output and "stale JSON" not in fresh.output
    assert cli("schema", "--out", str(out)).exit_code == 0
    (out / "tool.schema.json").write_text("{}")
    stale = cli("schema", "--check", "--out", str(out))
    assert stale.exit_code == 1 and "stale JSON Schemas" in stale.output and "missing JSON" not in stale.output


def test_init_refuses_an_app_id_its_cesync_yaml_would_not_validate_with(tmp_path: Path) -> None:
    for app in ("bad id!", "projects/p/locations/us/apps/x"):
        r = cli("init", "--dir", str(tmp_path / "repo"), "--app", app)
        assert r.exit_code == 1 and f"--app: invalid app id {app!r}" in r.output and "e.g. support-bot" in r.output
        assert not (tmp_path / "repo").exists()  # nothing written
    assert cli("init", "--dir", str(tmp_path / "repo"), "--app", "support-bot").exit_code == 0
    assert cli("validate", "--dir", str(tmp_path / "repo")).exit_code == 0


def test_a_bad_id_in_cesync_yaml_carries_no_pydantic_prefix(tmp_path: Path) -> None:
    assert cli("init", "--dir", str(tmp_path), "--app", "x").exit_code == 0
    config = tmp_path / "cesync.yaml"
    config.write_text(config.read_text().replace("    app: x\n", "    app: x y\n", 1))
    r = cli("validate", "--dir", str(tmp_path))
    assert r.exit_code == 1 and "environments.local.app: invalid app id 'x y'" in r.output and "Value error" not in r.output
