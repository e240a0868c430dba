"""Read what Google's Terraform provider says about CES fields into tests/evidence/terraform_fields.json.

    python scripts/terraform_fields.py MAGIC_MODULES_GIT_DIR [COMMIT]

MAGIC_MODULES_GIT_DIR is a clone of GoogleCloudPlatform/magic-modules (a bare one will do);
the resource definitions are read at COMMIT (default HEAD) from mmv1/products/ces/*.yaml.
For each resource it records the JSON paths of the fields marked ``output: true`` (only the
outermost: what an output block holds is output too), ``default_from_api: true`` and
``immutable: true``. The file names its source and commit: tests/evidence/ read it instead of
a network, and running this again at a newer commit shows what Google changed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

PRODUCTS = "mmv1/products/ces"
OUT = Path(__file__).resolve().parents[1] / "tests" / "evidence" / "terraform_fields.json"
MARKS = {"output": "output", "default_from_api": "defaultFromApi", "immutable": "immutable"}


def _git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", git_dir, *args], check=True, capture_output=True, text=True).stdout


def _walk(props: list[dict[str, Any]], prefix: str, found: dict[str, list[str]], inside_output: bool) -> None:
    for prop in props or []:
        path = f"{prefix}{prop.get('api_name') or prop['name']}"
        for mark, key in MARKS.items():
            if prop.get(mark) is True and not (mark == "output" and inside_output):
                found[key].append(path)
        children = prop.get("properties") or (prop.get("item_type") or {}).get("properties")
        children = children or (prop.get("value_type") or {}).get("properties")
        if children:
            _walk(children, path + ".", found, inside_output or prop.get("output") is True)


def read(git_dir: str, commit: str) -> dict[str, Any]:
    commit = _git(git_dir, "rev-parse", commit).strip()
    names = _git(git_dir, "ls-tree", "--name-only", commit, PRODUCTS + "/").split()
    resources: dict[str, Any] = {}
    for name in sorted(names):
        if name.endswith("/product.yaml") or not name.endswith(".yaml"):
            continue
        spec = YAML(typ="safe").load(_git(git_dir, "show", f"{commit}:{name}"))
        found: dict[str, list[str]] = {key: [] for key in MARKS.values()}
        _walk(spec.get("properties", []), "", found, False)
        resources[spec["name"]] = {"file": name, **found}
    return {
        "source": f"GoogleCloudPlatform/magic-modules {PRODUCTS}/*.yaml",
        "commit": commit,
        "note": "JSON paths (API names) per Terraform resource; output: outermost `output: true` fields only",
        "resources": resources,
    }


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    data = read(argv[0], argv[1] if len(argv) > 1 else "HEAD")
    OUT.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
