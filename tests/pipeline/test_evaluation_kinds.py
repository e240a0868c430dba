"""The evaluation kinds through the whole pipeline, against the emulator and Google's own v1beta client.

tests/fixtures/evaluations holds a golden with a tool call and response ({ref: tools/rate}), one
with a transfer ({ref: agents/billing}), an expectation, a dataset and a scheduled run: apply, plan
empty, read back by google.cloud.ces_v1beta, export and pull round-trip them, prune deletes them,
a bad reference is refused at file:line:col.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import httpx
from google.cloud import ces_v1beta
from google.protobuf import field_mask_pb2

from cesync.emulator.server import BackgroundServer
from cesync.repo.jsonschema import render_schemas
from tests.helpers import FIXTURES, cesync_in_process, official_evaluation_client
from tests.pipeline.test_pull import cli, plan_is_empty

APP = "projects/p/locations/us/apps/evals"


def _applied(tmp: Path, emulator: BackgroundServer) -> Path:
    root = tmp / "repo"
    shutil.copytree(FIXTURES / "evaluations", root)
    r = cli("apply", "--dir", str(root), "--endpoint", emulator.url, "--auto-approve")
    assert r.exit_code == 0, r.output
    assert "8 created, 1 updated" in r.output  # the app exists (auto_create_apps): its settings are an update
    return root


def test_apply_then_plan_is_empty_and_googles_client_reads_them(tmp_path: Path, emulator: BackgroundServer) -> None:
    root = _applied(tmp_path, emulator)
    plan_is_empty(root, emulator)
    beta = official_evaluation_client(emulator.url)
    golden = beta.get_evaluation(name=f"{APP}/evaluations/eur-rate").golden
    call = golden.turns[0].steps[1].expectation.tool_call
    assert call.tool == f"{APP}/tools/rate" and dict(call.args) == {"currency": "EUR"}
    assert list(golden.evaluation_expectations) == [f"{APP}/evaluationExpectations/polite"]
    transfer = beta.get_evaluation(name=f"{APP}/evaluations/billing-handoff").golden.turns[0].steps[1].expectation
    assert transfer.agent_transfer.target_agent == f"{APP}/agents/billing"
    dataset = beta.get_evaluation_dataset(name=f"{APP}/evaluationDatasets/smoke")
    assert sorted(dataset.evaluations) == [f"{APP}/evaluations/billing-handoff", f"{APP}/evaluations/eur-rate"]
    nightly = beta.get_scheduled_evaluation_run(name=f"{APP}/scheduledEvaluationRuns/nightly")
    assert nightly.request.app == APP and nightly.request.evaluation_dataset == dataset.name and nightly.active
    # The client asked v1beta for these and v1 for the rest: v1 has no evaluations.
    assert httpx.get(f"{emulator.url}/v1/{APP}/evaluations").status_code == 404


def test_a_console_edit_is_planned_and_pulled_back(tmp_path: Path, emulator: BackgroundServer) -> None:
    root = _applied(tmp_path, emulator)
    beta = official_evaluation_client(emulator.url)
    evaluation = beta.get_evaluation(name=f"{APP}/evaluations/eur-rate")
    evaluation.tags.append("nightly")
    beta.update_evaluation(evaluation=evaluation, update_mask=field_mask_pb2.FieldMask(paths=["tags"]))
    plan = cli("plan", "--dir", str(root), "--endpoint", emulator.url, "--detailed-exitcode")
    assert plan.exit_code == 2 and "evaluation eur-rate" in plan.output and "tags" in plan.output, plan.output
    before = (root / "evaluations/eur-rate.yaml").read_text()
    r = cli("pull", "--dir", str(root), "--endpoint", emulator.url)
    assert r.exit_code == 0, r.output
    after = (root / "evaluations/eur-rate.yaml").read_text()
    assert "nightly" in after and "{ref: tools/rate}" in after
    assert after.replace("nightly", "").count("\n") >= before.count("\n")  # comments and refs kept
    assert "# A golden: the user asks" in after
    plan_is_empty(root, emulator)


def test_export_round_trips_them(tmp_path: Path, emulator: BackgroundServer) -> None:
    root = _applied(tmp_path, emulator)
    out = tmp_path / "exported"
    r = cli("export", "--dir", str(root), "--endpoint", emulator.url, "--out", str(out))
    assert r.exit_code == 0, r.output
    # each kind counted as a sentence says it, not by its registry name ("1 evaluationExpectation")
    assert ("1 evaluation expectation, 2 evaluations, 1 evaluation dataset and 1 scheduled evaluation run of ") in r.output, (
        r.output
    )
    for rel in (
        "evaluations/eur-rate.yaml",
        "evaluations/billing-handoff.yaml",
        "evaluationDatasets/smoke.yaml",
        "evaluationExpectations/polite.yaml",
        "scheduledEvaluationRuns/nightly.yaml",
        "schemas/evaluation.schema.json",
    ):
        assert (out / rel).is_file(), rel
    exported = (out / "evaluations/eur-rate.yaml").read_text()
    assert "tool: {ref: tools/rate}" in exported and "- {ref: evaluationExpectations/polite}" in exported
    assert "targetAgent: {ref: agents/billing}" in (out / "evaluations/billing-handoff.yaml").read_text()
    assert "app:" not in (out / "scheduledEvaluationRuns/nightly.yaml").read_text()  # the environment's: filled in
    assert "schemas/evaluation.schema.json" in exported.splitlines()[0]
    assert cli("validate", "--dir", str(out)).exit_code == 0
    plan_is_empty(out, emulator)


def test_prune_deletes_what_the_repo_no_longer_has(tmp_path: Path, emulator: BackgroundServer) -> None:
    root = _applied(tmp_path, emulator)
    (root / "scheduledEvaluationRuns/nightly.yaml").unlink()
    (root / "evaluationDatasets/smoke.yaml").unlink()
    (root / "evaluations/billing-handoff.yaml").unlink()
    r = cli("apply", "--dir", str(root), "--endpoint", emulator.url, "--auto-approve", "--prune")
    assert r.exit_code == 0, r.output
    assert "3 deleted" in r.output
    beta = official_evaluation_client(emulator.url)
    assert [e.name for e in beta.list_evaluations(parent=APP)] == [f"{APP}/evaluations/eur-rate"]
    assert list(beta.list_evaluation_datasets(parent=APP)) == []
    assert list(beta.list_scheduled_evaluation_runs(parent=APP)) == []
    plan_is_empty(root, emulator)


def test_a_bad_reference_is_refused_where_it_is_written(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "evaluations", root)
    handoff = root / "evaluations/billing-handoff.yaml"
    handoff.write_text(handoff.read_text().replace("agents/billing", "agents/nobody"))
    rate = root / "evaluations/eur-rate.yaml"
    rate.write_text(
        rate.read_text().replace("tool: {ref: tools/rate}\n              args", "tool: {ref: agents/desk}\n              args")
    )
    r = cli("validate", "--dir", str(root))
    assert r.exit_code != 0
    assert "evaluations/billing-handoff.yaml:8:48: ref 'agents/nobody' names no agent of this repo" in r.output
    assert (
        "evaluations/eur-rate.yaml:10:27: ref 'agents/desk' cannot stand in golden.turns.steps.expectation.toolCall.tool"
        in r.output
    )


def test_an_unknown_field_in_a_golden_is_refused_at_its_line(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "evaluations", root)
    rate = root / "evaluations/eur-rate.yaml"
    rate.write_text(rate.read_text().replace("args: {currency: EUR}", "argz: {currency: EUR}"))
    r = cli("validate", "--dir", str(root))
    assert r.exit_code != 0 and "evaluations/eur-rate.yaml:11:" in r.output and "argz" in r.output, r.output


def test_ces_v1beta_message_names_match_the_files() -> None:
    """Each kind's file folder is the REST collection Google's client names (its resource paths)."""
    paths = ces_v1beta.EvaluationServiceClient
    assert paths.evaluation_path("p", "us", "evals", "x").endswith("/evaluations/x")
    assert paths.evaluation_dataset_path("p", "us", "evals", "x").endswith("/evaluationDatasets/x")
    assert paths.evaluation_expectation_path("p", "us", "evals", "x").endswith("/evaluationExpectations/x")
    assert paths.scheduled_evaluation_run_path("p", "us", "evals", "x").endswith("/scheduledEvaluationRuns/x")


def test_promote_takes_them_from_dev_to_prod_each_naming_its_own_app(tmp_path: Path) -> None:
    """One repo, two environments: what dev applied is promoted to prod, every name (the tool a golden
    calls, the dataset a scheduled run runs, the app it evaluates) prod's own."""
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "evaluations", root)
    (root / "cesync.yaml").write_text(
        "version: 1\ndefaults: {project: p, location: us}\nenvironments:\n  dev: {app: evals-dev}\n  prod: {app: evals-prod}\n"
    )
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "evaluations"]):
        subprocess.run([*git, *args], cwd=root, check=True, capture_output=True)
    with BackgroundServer(auto_create_apps=True) as server:
        dev = cesync_in_process("apply", "--env", "dev", "--dir", str(root), "--endpoint", server.url, "--auto-approve")
        assert dev.returncode == 0, dev.stderr
        promoted = cesync_in_process("promote", "--from", "dev", "--to", "prod", "--dir", str(root), "--endpoint", server.url)
        assert promoted.returncode == 0, promoted.stderr
        assert "scheduledEvaluationRun nightly will be created" in promoted.stdout
        applied = cesync_in_process("apply", "--env", "prod", "--dir", str(root), "--endpoint", server.url, "--auto-approve")
        assert applied.returncode == 0, applied.stderr
        prod = "projects/p/locations/us/apps/evals-prod"
        beta = official_evaluation_client(server.url)
        call = beta.get_evaluation(name=f"{prod}/evaluations/eur-rate").golden.turns[0].steps[1].expectation.tool_call
        assert call.tool == f"{prod}/tools/rate"
        nightly = beta.get_scheduled_evaluation_run(name=f"{prod}/scheduledEvaluationRuns/nightly")
        assert nightly.request.app == prod and nightly.request.evaluation_dataset == f"{prod}/evaluationDatasets/smoke"
        dev_run = beta.get_scheduled_evaluation_run(name="projects/p/locations/us/apps/evals-dev/scheduledEvaluationRuns/nightly")
        assert dev_run.request.app == "projects/p/locations/us/apps/evals-dev"


def test_the_schema_lets_a_scheduled_run_leave_its_app_out() -> None:
    """The API requires request.app; the file's schema does not, since cesync fills it in."""
    schema = json.loads(render_schemas()["scheduledEvaluationRun.schema.json"])
    assert "app" not in schema["$defs"]["RunEvaluationRequest"].get("required", [])
    assert "app" in schema["$defs"]["RunEvaluationRequest"]["properties"]
    assert "request" in schema["required"]
