"""The resource kinds cesync manages: one entry each, read by every layer (pure, cheap to import).

Everything that differs between kinds is an attribute of :class:`ResourceKind`;
loading, normalizing, diffing, planning, applying, exporting and importing read
it from the kind a :class:`~cesync.api.resource.Resource` or a plan's change carries,
instead of keeping tables of their own or testing kind names (tests/test_registry_leaks.py
fails on either). Adding a kind is one entry here and the steps of
docs/contributing/adding-a-kind.md. The emulator keeps its own tables on purpose: it must
not share our understanding of the API.

The model is named, not imported, so that the command line can read the
registry without loading pydantic (``cesync --help`` stays fast).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any

from .resource import ID_RE
from .words import count

if TYPE_CHECKING:
    from ..models import ProtoModel

__all__ = [
    "APP",
    "DRAFT_VERSION",
    "KINDS",
    "REF_ONLY",
    "SERVER_MADE_TOOLS",
    "THE_APP",
    "TOOL_HOLDER",
    "ResourceKind",
    "by_collection",
    "by_snapshot_field",
    "by_word",
    "collections",
    "kind_of_name",
    "names_pattern",
    "ref_collections",
    "ref_fields",
]

Defaults = Callable[[str, dict[str, Any]], None]  # (id, canonical body) -> None, edits in place


def _words(camel: str) -> str:
    """``scheduledEvaluationRuns`` -> ``scheduled evaluation runs``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", camel).lower()


@dataclass(frozen=True, eq=False)  # one object per kind: compared and hashed by identity
class ResourceKind:
    """What cesync needs to know about one kind of resource.

    Resources and plan changes carry their kind; ``str(kind)`` is its name, and a saved
    plan, a digest or a message holds only that name (a kind pickles as its name too, so an
    unpickled resource holds the registry's own entry)."""

    name: str  # singular, as in plans and messages: "tool"
    collection: str  # REST collection, repo folder, archive folder, {ref: <collection>/<id>}: "tools"
    model_name: str  # class in cesync.models
    rank: int  # creates and updates: lower first at the same dependency level; deletes: the reverse
    references: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # dotted field -> collections it names
    listable: bool = True  # read by listing its collection (the app is read by its name)
    deletable: bool = True
    list_filter: str = ""  # the list call's ``filter`` (CES hides some resources without one)
    managed: Callable[[dict[str, Any]], bool] = lambda body: True  # which listed resources cesync owns
    server_defaults: Defaults | None = None  # values the server fills in that equal their absence
    # Top-level fields a create may leave out and a patch set once what they name exists:
    # how a reference cycle between new resources is broken (see order.py).
    deferrable: frozenset[str] = frozenset()
    singleton: bool = False  # the app itself: one per environment, named by the parent, file <name>.yaml
    written_last: bool = False  # created and updated after every other kind (they see the whole app)
    # Members of the type oneof that CES makes itself: a file holding one is refused, and a remote
    # resource of that type is not cesync's to write. Member -> the toolset field that makes it
    # ("" when no file of the repo can: see SERVER_MADE_TOOLS).
    server_made: Mapping[str, str] = field(default_factory=dict)
    # The REST surface the kind is served on: the evaluation kinds exist only in v1beta
    # (google.cloud.ces.v1beta EvaluationService; google.cloud.ces.v1 has no such service).
    api_version: str = "v1"
    # Dotted fields that hold the app's own name (a scheduled run's request.app): a file may leave
    # them out and cesync writes the environment's app there (so one file promotes); export leaves
    # them out when they name the app.
    app_fields: tuple[str, ...] = ()
    # Its type (a oneof member) carries a ``name`` the app's tool calls know it by, unique in
    # the app: a tool's clientFunction.name, pythonFunction.name, ...
    named_by_type: bool = False
    # Its displayName is unique in the app: "Must be unique within the same app" (Toolset), "Unique
    # within an App" (Evaluation, EvaluationDataset), "Must be unique within the app"
    # (EvaluationExpectation), in google-cloud-ces's docstrings; Agent, Guardrail and Example say
    # nothing, and the emulator refuses a second one as a console does (sources silent). A rename that
    # keeps the name must delete the old one before it creates the new (core.passes.renames).
    unique_name: bool = False
    holds_tools: bool = False  # its tools are named TOOLSET/TOOL_ID: what a server-made tool is written as
    # Export names its externalized documents (code/, schemas/) after the file alone
    # (``code/<stem>.py``); other kinds add their name (``code/<stem>.<kind>.py``).
    bare_document_names: bool = False
    run_by_eval: bool = False  # what cesync eval runs (runEvaluation names evaluations)
    serves: tuple[str, ...] = ()  # fields naming the versions it serves; none, or versions/-: the draft
    converses: bool = False  # a conversation is in one (agents): what a golden's tools and a deployment reach
    checks_turns: bool = False  # checks every turn of the agent or app naming it (guardrails)
    figure: str = "rectangle"  # cesync graph's shape: stadium, subroutine, hexagon, circle, parallelogram, flag
    # How a sentence says one and several of them, where counts are printed to people
    # ("1 evaluation expectation", "2 scheduled evaluation runs"); machine outputs keep name and
    # collection. Unset: the words of name and of collection, camelCase apart and lowercase.
    singular: str = ""
    plural: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "singular", self.singular or _words(self.name))
        object.__setattr__(self, "plural", self.plural or _words(self.collection))

    def __str__(self) -> str:
        return self.name

    def counted(self, n: int) -> str:
        """``1 evaluation expectation``, ``3 tools``: n of them, as a sentence says it."""
        return count(n, self.singular, self.plural)

    def __repr__(self) -> str:
        return f"<kind {self.name}>"

    def __reduce__(self) -> tuple[Callable[[str], ResourceKind], tuple[str]]:
        return (_named, (self.name,))

    @property
    def in_snapshot(self) -> bool:
        """An AppSnapshot holds it (AppVersion.snapshot, read from the descriptor snapshot): apply
        --snapshot and rollback restore it, and a three-way plan tells its drift."""
        return self.snapshot_field in _snapshot_fields()

    @property
    def snapshot_field(self) -> str:
        """Its field of an AppSnapshot: ``app`` for the app, else its collection."""
        return self.name if self.singleton else self.collection

    def label(self, rid: str) -> str:
        """How one of them is named in a sentence: ``tool greet``; the app itself as ``the app``
        (its id is its kind's name, so ``app app`` said nothing)."""
        return "the app" if self.singleton else f"{self.name} {rid}"

    @property
    def id_param(self) -> str:
        """The create call's id query parameter: ``toolId``."""
        return f"{self.name}Id"

    @property
    def folder(self) -> str:
        """The repo folder of this kind's files ("" for the app: its file is app.yaml at the top)."""
        return "" if self.singleton else self.collection

    @property
    def model(self) -> type[ProtoModel]:
        model: type[ProtoModel] = getattr(importlib.import_module("cesync.models"), self.model_name)
        return model

    def resource_name(self, parent: str, rid: str) -> str:
        return parent if self.singleton else f"{parent}/{self.collection}/{rid}"

    def id_in(self, parent: str, name: object) -> str | None:
        """The id of a server's resource name when it is one of parent's of this kind, else None.

        Only plain id segments pass: a listed name with ``..``, ``%2F``, ``?`` or ``#``, or of
        another app, would otherwise become a request (a delete under --prune) on something
        else. A tool a toolset makes is named under its toolset (``{parent}/toolsets/T/tools/X``).
        """
        if not isinstance(name, str):
            return None
        prefix = f"{parent}/{self.collection}/"
        if name.startswith(prefix) and ID_RE.match(name[len(prefix) :]):
            return name[len(prefix) :]
        if self.name == "tool" and name.startswith(f"{parent}/toolsets/"):
            toolset, _, rid = name[len(f"{parent}/toolsets/") :].partition("/tools/")
            if ID_RE.match(toolset) and ID_RE.match(rid):
                return rid
        return None


def _execution_defaults(out: dict[str, Any]) -> None:
    """A SYNCHRONOUS execution type and a 30 s (60 s when asynchronous) timeout are CES's defaults."""
    from .protojson import duration_nanos

    if out.get("executionType") == "SYNCHRONOUS":
        del out["executionType"]
    timeout = out.get("timeout")
    if isinstance(timeout, str):
        try:
            if duration_nanos(timeout) == (60 if out.get("executionType") == "ASYNCHRONOUS" else 30) * 1_000_000_000:
                del out["timeout"]
        except ValueError:
            pass


def _tool_defaults(rid: str, out: dict[str, Any]) -> None:
    from ..core.documents import python_functions

    _execution_defaults(out)
    fn = out.get("pythonFunction")
    if isinstance(fn, dict) and not fn.get("name") and isinstance(fn.get("pythonCode"), str):
        try:
            names = python_functions(fn["pythonCode"])
        except (SyntaxError, ValueError):
            names = []
        if names:
            fn["name"] = names[0]  # the server names a Python tool after its first function
    if out.get("fileSearchTool", {}).get("corpusType") == "FULLY_MANAGED":
        del out["fileSearchTool"]["corpusType"]
    if out.get("widgetTool", {}).get("widgetType") == "CUSTOM":
        del out["widgetTool"]["widgetType"]


def _toolset_defaults(rid: str, out: dict[str, Any]) -> None:
    _execution_defaults(out)
    if out.get("displayName") == rid:
        del out["displayName"]


class _ServerMadeTools(Mapping[str, str]):
    """The tool types no CreateTool or UpdateTool may carry, each with the toolset field that makes it
    ("" for none): api.behaviour's READ_ONLY rules, which cite Terraform's mmv1/products/ces/Tool.yaml.
    Read on first use, from the overlay alone (no descriptor), in fields' order: TOOL_TYPES', the descriptor's."""

    @cached_property
    def _table(self) -> dict[str, str]:
        from ..models import TOOL_TYPES
        from . import behaviour as fb
        from .descriptors import PACKAGE

        made = sorted(fb.overlay_rules(f"{PACKAGE}.Tool", fb.READ_ONLY), key=lambda r: TOOL_TYPES.index(r.field))
        return {r.field: r.detail for r in made}

    def __getitem__(self, key: str) -> str:
        return self._table[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)


SERVER_MADE_TOOLS: Mapping[str, str] = _ServerMadeTools()


def _tool_managed(body: dict[str, Any]) -> bool:
    # System tools come with the app, tools derived from toolsets belong to their toolset, and the
    # other server-made types are made outside cesync's reach: none is a file to apply.
    return not any(t in body for t in SERVER_MADE_TOOLS) and "/toolsets/" not in str(body.get("name", ""))


# What a golden conversation or a scenario names: the tools and toolsets it expects called or
# answering, the agents it transfers to (google-cloud-ces ces_v1beta types/evaluation.py:
# Evaluation.Step, GoldenExpectation, ScenarioExpectation; ToolCall.tool, ToolResponse.tool
# "Format: .../apps/{app}/tools/{tool}", ToolsetTool.toolset, AgentTransfer.target_agent
# ".../agents/{agent}"), and the evaluation expectations it is checked against.
def _tool_refs(*prefixes: str) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for prefix in prefixes:
        out[f"{prefix}.tool"] = ("tools",)
        out[f"{prefix}.toolsetTool.toolset"] = ("toolsets",)
    return out


def _message_refs(prefix: str) -> dict[str, tuple[str, ...]]:
    """The references of a Message's chunks (an agent response)."""
    return {
        **_tool_refs(f"{prefix}.chunks.toolCall", f"{prefix}.chunks.toolResponse"),
        f"{prefix}.chunks.agentTransfer.targetAgent": ("agents",),
    }


_TRAFFIC = "experimentConfig.versionRelease.trafficAllocations.appVersion"  # a traffic split (discovery doc, ces.v1)
_STEP = "golden.turns.steps"
_EXPECT = f"{_STEP}.expectation"
_SCENARIO = "scenario.scenarioExpectations"
_EVALUATION_REFS: dict[str, tuple[str, ...]] = {
    **_tool_refs(f"{_EXPECT}.toolCall", f"{_EXPECT}.toolResponse", f"{_EXPECT}.mockToolResponse"),
    **_tool_refs(f"{_STEP}.userInput.toolResponses.toolResponses"),
    **_message_refs(f"{_EXPECT}.agentResponse"),
    f"{_EXPECT}.agentTransfer.targetAgent": ("agents",),
    f"{_STEP}.agentTransfer.targetAgent": ("agents",),
    "golden.evaluationExpectations": ("evaluationExpectations",),
    **_tool_refs(f"{_SCENARIO}.toolExpectation.expectedToolCall", f"{_SCENARIO}.toolExpectation.mockToolResponse"),
    **_message_refs(f"{_SCENARIO}.agentResponse"),
    "scenario.evaluationExpectations": ("evaluationExpectations",),
}


# --- the registry -------------------------------------------------------------------------

_ENTRIES = (
    ResourceKind(
        name="tool",
        collection="tools",
        model_name="Tool",
        rank=1,
        references={
            "agentTool.agent": ("agents",),
            "widgetTool.dataMapping.sourceToolName": ("tools",),
        },
        list_filter="include_system_tools=true",
        managed=_tool_managed,
        server_defaults=_tool_defaults,
        server_made=SERVER_MADE_TOOLS,
        named_by_type=True,
        bare_document_names=True,
    ),
    ResourceKind(
        name="toolset",
        unique_name=True,
        collection="toolsets",
        model_name="Toolset",
        rank=0,
        server_defaults=_toolset_defaults,
        holds_tools=True,
        figure="subroutine",
    ),
    ResourceKind(
        name="guardrail",
        unique_name=True,
        collection="guardrails",
        model_name="Guardrail",
        rank=2,
        references={"action.transferAgent.agent": ("agents",)},
        deferrable=frozenset({"action"}),
        checks_turns=True,
        figure="hexagon",
    ),
    ResourceKind(
        name="agent",
        unique_name=True,
        collection="agents",
        model_name="Agent",
        rank=3,
        references={
            "tools": ("tools",),
            "toolsets.toolset": ("toolsets",),
            "childAgents": ("agents",),
            "guardrails": ("guardrails",),
            "transferRules.childAgent": ("agents",),
        },
        deferrable=frozenset({"tools", "toolsets", "childAgents", "guardrails", "transferRules"}),
        converses=True,
        figure="stadium",
    ),
    ResourceKind(
        name="app",
        collection="apps",
        model_name="App",
        rank=4,
        references={"rootAgent": ("agents",), "guardrails": ("guardrails",)},
        listable=False,
        deletable=False,
        deferrable=frozenset({"rootAgent", "guardrails"}),
        singleton=True,
        figure="circle",
    ),
    ResourceKind(
        name="example",
        unique_name=True,
        collection="examples",
        model_name="Example",
        rank=5,
        references={
            "entryAgent": ("agents",),
            "messages.chunks.toolCall.tool": ("tools",),
            "messages.chunks.toolCall.toolsetTool.toolset": ("toolsets",),
            "messages.chunks.toolResponse.tool": ("tools",),
            "messages.chunks.toolResponse.toolsetTool.toolset": ("toolsets",),
            "messages.chunks.agentTransfer.targetAgent": ("agents",),
        },
        written_last=True,
    ),
    ResourceKind(
        name="deployment",
        collection="deployments",
        model_name="Deployment",
        rank=6,
        references={"appVersion": ("versions",), _TRAFFIC: ("versions",)},
        written_last=True,
        serves=("appVersion", _TRAFFIC),  # DRAFT_VERSION below is "the draft app" in either
        figure="parallelogram",
    ),
    ResourceKind(
        name="evaluationExpectation",
        unique_name=True,
        collection="evaluationExpectations",
        model_name="EvaluationExpectation",
        rank=7,
        api_version="v1beta",
    ),
    ResourceKind(
        name="evaluation",
        unique_name=True,
        collection="evaluations",
        model_name="Evaluation",
        rank=8,
        references=_EVALUATION_REFS,
        api_version="v1beta",
        run_by_eval=True,
        figure="flag",
    ),
    ResourceKind(
        name="evaluationDataset",
        unique_name=True,
        collection="evaluationDatasets",
        model_name="EvaluationDataset",
        rank=9,
        references={"evaluations": ("evaluations",)},
        api_version="v1beta",
        figure="flag",
    ),
    ResourceKind(
        name="scheduledEvaluationRun",
        collection="scheduledEvaluationRuns",
        model_name="ScheduledEvaluationRun",
        rank=10,
        references={
            "request.evaluations": ("evaluations",),
            "request.evaluationDataset": ("evaluationDatasets",),
            "request.appVersion": ("versions",),
        },
        api_version="v1beta",
        app_fields=("request.app",),  # RunEvaluationRequest.app [REQUIRED]: "The app to evaluate."
        figure="flag",
    ),
)
KINDS: dict[str, ResourceKind] = {k.name: k for k in _ENTRIES}  # in the order files and messages list them
APP = "app"  # the singleton kind's name and id: one app per environment
THE_APP = KINDS[APP]  # ... and its kind
TOOL_HOLDER = next(k for k in _ENTRIES if k.holds_tools)  # the toolset: what a server-made tool is written as


def _named(name: str) -> ResourceKind:
    return KINDS[name]


# Collections a {ref:} may name that cesync does not manage: refs to them are not checked
# (app versions are made by apply --snapshot, not defined in the repo).
REF_ONLY = ("versions",)
# The draft app as a version: Deployment.app_version's docstring (google-cloud-ces, ces_v1 and
# ces_v1beta): "Use projects/{project}/locations/{location}/apps/{app}/versions/- to use the draft app."
DRAFT_VERSION = "versions/-"


def collections() -> list[str]:
    """The collections of the kinds that live under the app (not the app itself)."""
    return [k.collection for k in KINDS.values() if not k.singleton]


def ref_collections() -> list[str]:
    """What ``{ref: <collection>/<id>}`` accepts."""
    return [*collections(), *(c for c in REF_ONLY if c not in collections())]


def ref_fields() -> set[str]:
    """Field names that hold a resource name of this app, in any kind."""
    return {path.rsplit(".", 1)[-1] for k in KINDS.values() for path in k.references}


def by_collection(collection: str) -> ResourceKind | None:
    return next((k for k in KINDS.values() if k.collection == collection and not k.singleton), None)


@cache
def _snapshot_fields() -> frozenset[str]:
    from . import descriptors

    return frozenset(f.json_name for f in descriptors.message(f"{descriptors.PACKAGE}.AppSnapshot").fields)


def by_snapshot_field(key: str) -> ResourceKind | None:
    """The kind an AppSnapshot's field holds (``app``, ``tools``, ...), None for one it does not."""
    return next((k for k in KINDS.values() if k.in_snapshot and k.snapshot_field == key), None)


def by_word(word: str) -> ResourceKind | None:
    """The kind a user or a message names, singular or plural: ``tool``, ``tools``."""
    return KINDS.get(word) or by_collection(word)


def kind_of_name(name: str, default: str = "tool") -> ResourceKind:
    """The kind of a full resource name (``.../toolsets/t/tools/x`` is a tool)."""
    parts = name.split("/")
    if len(parts) == 6 and parts[0] == "projects" and parts[4] == "apps":
        return KINDS[APP]  # the app itself (its collection is no child collection of an app)
    found = by_collection(parts[-2]) if len(parts) >= 2 else None
    return found or KINDS[default]


@cache  # one per app: plan asks for each resource (36,000 times at 10k)
def names_pattern(parent: str) -> re.Pattern[str]:
    """Full names of this app's managed resources: groups (collection, id)."""
    return re.compile(re.escape(parent) + "/(" + "|".join(map(re.escape, collections())) + ")/([A-Za-z0-9_-]+)")
