"""The models against the published API: snapshot current, module current, every field conforming."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import create_model

from cesync.api import descriptors as api
from cesync.models import Behavior, ProtoModel, Tool, Toolset, specs
from cesync.models import messages as generated
from cesync.models.base import Bytes, Double, Duration, Meta
from tests.models.conformance import check, pairs

ces_v1 = pytest.importorskip("google.cloud.ces_v1")
ROOT = Path(__file__).resolve().parents[2]


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_api", ROOT / "scripts/gen_api.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_api", module)
    spec.loader.exec_module(module)
    return module


GEN = _generator()


def test_snapshot_matches_installed_package() -> None:
    fds, facts = GEN.extract()
    assert api.DESCRIPTOR_FILE.read_bytes() == fds, "descriptor snapshot is stale: run python scripts/gen_api.py"
    assert api.BEHAVIORS_FILE.read_text(encoding="utf-8") == facts, "behaviour snapshot is stale: run python scripts/gen_api.py"


def test_beta_snapshot_matches_installed_package() -> None:
    """v1beta's part: its App and the evaluation kinds with their service, and their facts."""
    fds, facts = GEN.extract_beta()
    assert api.BETA_FILE.read_bytes() == fds, "v1beta descriptor snapshot is stale: run python scripts/gen_api.py"
    assert api.BETA_BEHAVIORS_FILE.read_text(encoding="utf-8") == facts, "v1beta facts are stale: run python scripts/gen_api.py"
    for name in ("Evaluation", "EvaluationDataset", "EvaluationExpectation", "ScheduledEvaluationRun", "DeleteEvaluationRequest"):
        assert f"{api.BETA_PACKAGE}.{name}" in api.facts()["messages"]
        assert api.message(f"{api.BETA_PACKAGE}.{name}").full_name == f"{api.BETA_PACKAGE}.{name}"


def test_generated_module_is_current() -> None:
    rendered = GEN.render_models(api.DESCRIPTOR_FILE.read_bytes(), api.BEHAVIORS_FILE.read_text(encoding="utf-8"))
    assert [p.name for p in rendered] == [
        "messages.py",
        *(p.name for p in [GEN.SHARED_FILE, *GEN.KIND_FILES.values()]),
        "other.py",
    ]
    rendered.update(GEN.render_beta_models(api.BETA_FILE.read_bytes(), api.BETA_BEHAVIORS_FILE.read_text(encoding="utf-8")))
    for path, text in rendered.items():
        assert path.read_text(encoding="utf-8") == text, f"{path.name} is stale: run python scripts/gen_api.py"


def test_each_kinds_models_are_made_on_first_use_of_the_kind() -> None:
    """msg_KIND.py holds what one managed kind alone holds, msg_shared.py what several do: a kind's
    model loads those two, and the API's other messages (other.py) come on first use, through
    messages as well."""
    import subprocess

    from cesync.api.kinds import KINDS

    probe = (
        "import sys, cesync.models as models, cesync.models.messages as m, cesync.api.kinds as k\n"
        "made = lambda: sorted(n.rpartition('.')[2] for n in sys.modules if n.startswith('cesync.models.msg_'))\n"
        "print(made(), models.TOOL_TYPES == models.Tool.oneofs['tool_type'][0], made())\n"
        "print(models.TOOLSET_TYPES == models.Toolset.oneofs['toolset_type'][0], made())\n"
        "for kind in k.KINDS.values(): kind.model.model_json_schema()\n"  # every resource's whole tree builds
        "print('cesync.models.other' in sys.modules, m.SessionInput.__module__)\n"
    )
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert r.stdout.split() == [
        "[]",
        "True",
        "['msg_shared',",
        "'msg_tool']",
        "True",
        "['msg_shared',",
        "'msg_tool',",
        "'msg_toolset']",
        "False",
        "cesync.models.other",
    ], r.stderr
    homes = {n: GEN.KIND_FILES[n].stem for n in GEN.overlay.RESOURCE_MESSAGES}
    assert {n: getattr(generated, n.rsplit(".", 1)[1]).__module__.rsplit(".", 1)[1] for n in homes} == homes
    resources = (*GEN.overlay.RESOURCE_MESSAGES, *GEN.overlay.BETA_RESOURCE_MESSAGES)
    assert {kind.model_name for kind in KINDS.values()} <= {n.rsplit(".", 1)[1] for n in resources}
    with pytest.raises(AttributeError):
        generated.NoSuchMessage  # noqa: B018


def _roots() -> list[tuple[type[ProtoModel], Any]]:
    """Every top-level message of the description (the package's and the discovery document's,
    merged: test_snapshot_matches_installed_package keeps it equal to what the packages give),
    paired with our class of the same name."""
    out = []
    for full in sorted(api.facts()["messages"]):
        name = full.removeprefix(api.PACKAGE + ".")
        if full.startswith(api.PACKAGE + ".") and "." not in name:
            out.append((getattr(generated, name), api.message(full)))
    return out


PAIRS = pairs(_roots())


def _beta_roots() -> list[tuple[type[ProtoModel], Any]]:
    """The v1beta kinds (cesync.models.evaluations), paired with the installed package's messages."""
    from cesync.models import evaluations

    names = [n.rsplit(".", 1)[1] for n in GEN.overlay.BETA_RESOURCE_MESSAGES]
    return [(getattr(evaluations, n), api.message(f"{api.BETA_PACKAGE}.{n}")) for n in names]


BETA_PAIRS = pairs(_beta_roots())


def test_every_message_has_a_model() -> None:
    modelled = {desc.full_name for _, desc in PAIRS}
    published = {m for m in api.facts()["messages"] if not m.endswith("Entry") and not m.startswith(api.BETA_PACKAGE)}
    assert modelled == published
    from cesync.models import other

    made = [getattr(generated, n) for n in generated.__all__] + [*vars(other).values()]
    classes = {v for v in made if isinstance(v, type) and issubclass(v, ProtoModel) and v is not ProtoModel}
    assert len(classes) == len(published)


@pytest.mark.parametrize(("ours", "theirs"), PAIRS, ids=[t.full_name.removeprefix("google.cloud.ces.v1.") for _, t in PAIRS])
def test_every_field_conforms(ours: type[ProtoModel], theirs: Any) -> None:
    assert check(ours, theirs) == []


@pytest.mark.parametrize(("ours", "theirs"), BETA_PAIRS, ids=[t.full_name for _, t in BETA_PAIRS])
def test_every_v1beta_field_conforms(ours: type[ProtoModel], theirs: Any) -> None:
    assert check(ours, theirs) == []


def test_every_v1beta_kind_message_has_a_model() -> None:
    """Each message an evaluation kind holds is modelled, and its facts are in the snapshot."""
    from cesync.models import evaluations

    modelled = {desc.full_name for _, desc in BETA_PAIRS}
    made = {v for v in vars(evaluations).values() if isinstance(v, type) and issubclass(v, ProtoModel) and v is not ProtoModel}
    assert len(made - {evaluations.Status}) == len(modelled)  # google.rpc.Status: not CES's, no facts to pair
    assert modelled <= set(api.facts()["messages"])


def test_tool_and_toolset_are_published_messages() -> None:
    paired = {(model, desc.full_name) for model, desc in PAIRS}
    assert (Tool, f"{api.PACKAGE}.Tool") in paired and (Toolset, f"{api.PACKAGE}.Toolset") in paired


# --- the check can fail: each mutation of a copy of a model is reported -------------------


def _mutated(model: type[ProtoModel], field: str, annotation: Any = None, behavior: Behavior | None = None) -> type[ProtoModel]:
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        tp = info.annotation
        info = info._copy()
        if name == field:
            if annotation is not None:  # pydantic lifted the old type's markers into the metadata
                tp, info.metadata = annotation, [m for m in info.metadata if isinstance(m, Meta)]
            if behavior is not None:
                info.metadata = [Meta(behavior) if isinstance(m, Meta) else m for m in info.metadata]
        fields[name] = (tp, info)
    copy = create_model(model.__name__, __base__=ProtoModel, **fields)  # type: ignore[call-overload]
    copy.oneofs = model.oneofs
    return copy  # type: ignore[no-any-return]


def _desc(model: type[ProtoModel]) -> Any:
    return next(d for m, d in PAIRS if m is model)


MUTATIONS = {
    "Schema.minItems int64 -> int32": (generated.Schema, "minItems", int | None, None, "minItems: type int32, API has int64"),
    "ControlPoint.boostAmount float -> double": (
        generated.ControlPoint,
        "boostAmount",
        Double | None,
        None,
        "boostAmount: type double, API has float",
    ),
    "CaCert.cert bytes -> string": (generated.CaCert, "cert", str, None, "cert: type string, API has bytes"),
    "Tool.timeout Duration -> string": (Tool, "timeout", str | None, None, "timeout: type string, API has duration"),
    "Tool.displayName output only -> optional": (
        Tool,
        "displayName",
        None,
        Behavior.OPTIONAL,
        "displayName: behaviour OPTIONAL, API has OUTPUT_ONLY",
    ),
    "Tool.name identifier -> required": (Tool, "name", None, Behavior.REQUIRED, "name: behaviour REQUIRED, API has IDENTIFIER"),
    "Schema.minimum loses presence": (generated.Schema, "minimum", Double | None, Behavior.OPTIONAL, None),
    "CaCert.cert string -> bytes stays": (generated.CaCert, "cert", Bytes, None, None),
    "Tool.timeout stays a Duration": (Tool, "timeout", Duration | None, None, None),
}


@pytest.mark.parametrize("case", list(MUTATIONS), ids=list(MUTATIONS))
def test_mutation_is_caught(case: str) -> None:
    model, field, annotation, behavior, expected = MUTATIONS[case]
    original = check(model, _desc(model))
    assert original == []
    errors = check(_mutated(model, field, annotation, behavior), _desc(model))
    if expected is None:
        # control cases: a copy that changes nothing relevant (or presence, see below) is judged as such
        if "presence" in case:
            assert any("minimum: presence False, API has True" in e for e in errors), errors
        else:
            assert errors == [], errors
    else:
        assert any(e.endswith(expected) for e in errors), errors


@pytest.mark.parametrize(
    "mutate",
    [
        lambda s: s.update(repeated=not s["repeated"]),
        lambda s: s.update(oneof="other"),
        lambda s: s.update(enum={**s["enum"], "EXTRA": 99}),
        lambda s: s.update(name="renamed"),
    ],
    ids=["repeated", "oneof", "enum", "json-name"],
)
def test_spec_level_mutations_are_caught(mutate: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Mutations of the field table itself (what every code path reads) fail the check too."""
    import dataclasses

    table = dict(specs(Tool))
    spec = table["executionType"]
    values = dataclasses.asdict(spec)
    values["message"] = spec.message
    mutate(values)
    name = values["name"]
    table.pop("executionType")
    table[name] = dataclasses.replace(spec, **{k: v for k, v in values.items() if k != "message"})
    monkeypatch.setattr("tests.models.conformance.specs", lambda model: table if model is Tool else specs(model))
    assert check(Tool, _desc(Tool)) != []


def test_seed_only_fields_are_modelled() -> None:
    assert "agent" in specs(generated.AgentTool)
    assert "agent" not in {f.json_name for f in ces_v1.AgentTool.pb().DESCRIPTOR.fields}
