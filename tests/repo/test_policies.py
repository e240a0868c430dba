"""repo.policies: the policy folder read, each bad file a problem at its file:line:col."""

from __future__ import annotations

from pathlib import Path

import pytest

from cesync.errors import ConfigError
from cesync.repo.policies import load_policies


def test_no_folder_named_means_no_rules(tmp_path: Path) -> None:
    assert not load_policies(tmp_path, None)


def test_a_missing_folder_says_so(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_policies(tmp_path, "policies")
    assert "'policies' is not a folder of the repo" in str(info.value)


def test_every_bad_file_is_reported_at_its_position(tmp_path: Path) -> None:
    folder = tmp_path / "policies"
    folder.mkdir()
    (folder / "a.yaml").write_text("rules:\n  - name: ok\n    deny: 'true'\n  - name: Bad Name\n    deny: 'true'\n")
    (folder / "b.yaml").write_text("rules:\n  - name: x\n    deny: 'true'\n    warn: 'true'\n")
    (folder / "c.yaml").write_text("rules: [\n")
    with pytest.raises(ConfigError) as info:
        load_policies(tmp_path, "policies")
    text = str(info.value)
    assert "policies/a.yaml:4:11: rules.1.name: rule name 'Bad Name': use lowercase letters, digits and '-'" in text
    assert "policies/b.yaml:2:5: rules.0: rule 'x': give exactly one of deny or warn" in text
    assert "policies/c.yaml:" in text


@pytest.mark.parametrize("folder", ["/etc", "../elsewhere", "a/../../b", "", "c:/x"])
def test_cesync_yaml_names_a_folder_inside_the_repo(folder: str) -> None:
    from pydantic import ValidationError

    from cesync.repo.config import Config

    with pytest.raises(ValidationError, match="name a folder inside the repo"):
        Config.model_validate({"environments": {"dev": {"app": "a"}}, "policies": folder})
