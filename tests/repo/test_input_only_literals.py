"""validate warns on an INPUT_ONLY field (a one-time credential) written as a literal (cesync.api.behaviour)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import cesync_in_process, make_repo

DEPLOYMENT = """displayName: WhatsApp
channelProfile:
  channelType: WHATSAPP
whatsappCredentials:
  authCode: ${WA_CODE}
  pin: "493817"
  phoneNumber: "+15550100"
  businessAccountId: biz-1
  wabaId: waba-1
  conversationProfileId: profile-1
"""
CONFIG = "version: 1\ndefaults:\n  sensitive: [WA_CODE]\nenvironments:\n  local:\n    endpoint: embedded\n    project: p\n    location: us\n    app: a\n"


def test_a_literal_input_only_value_is_a_warning_at_its_place(tmp_path: Path) -> None:
    root = make_repo(tmp_path, {"cesync.yaml": CONFIG, "deployments/wa.yaml": DEPLOYMENT})
    result = cesync_in_process("validate", "--dir", str(root), "--var", "WA_CODE=code-from-ci")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "input-only credential" in line]
    assert lines[0].startswith("deployments/wa.yaml:6:8: warning: whatsappCredentials.pin is an input-only credential")
    assert len(lines) == 5  # every literal leaf; authCode comes from a sensitive variable
    assert "493817" not in result.stdout + result.stderr
    strict = cesync_in_process("validate", "--dir", str(root), "--strict", "--var", "WA_CODE=code-from-ci")
    assert strict.returncode == 1
