"""The list filters the v1beta evaluation kinds document (emulator/list_filters.py), through Google's
own v1beta client: ListEvaluations' evaluationFilter (evaluation_datasets) and evaluationRunFilter
(create_time, initiated_by, app_version_display_name of its runs), ListScheduledEvaluationRuns'
filter (request.evaluations, request.evaluation_dataset); anything else is INVALID_ARGUMENT
naming what is supported."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from google.api_core import exceptions
from google.cloud import ces_v1, ces_v1beta
from google.protobuf import field_mask_pb2
from hypothesis import given
from hypothesis import strategies as st

from cesync.emulator.errors import RpcError
from cesync.emulator.lists import listing
from cesync.emulator.server import BackgroundServer
from tests.helpers import fast_polling, official_client, official_evaluation_client

APP = "projects/p/locations/us/apps/a"
Beta = ces_v1beta.EvaluationServiceClient


@pytest.fixture
def beta(emulator: BackgroundServer) -> Beta:
    """The app with evaluations a (in dataset smoke) and b, a scheduled run of a and one of smoke."""
    v1 = official_client(emulator.url)
    code = 'def rate(currency: str) -> dict:\n    """Rate."""\n    return {"rate": 1.1}\n'
    tool = v1.create_tool(parent=APP, tool=ces_v1.Tool(python_function=ces_v1.PythonFunction(python_code=code)), tool_id="rate")
    client: Beta = official_evaluation_client(emulator.url)
    call = ces_v1beta.ToolCall(tool=tool.name, args={"currency": "EUR"})
    steps = [ces_v1beta.Evaluation.Step(expectation=ces_v1beta.Evaluation.GoldenExpectation(tool_call=call))]
    golden = ces_v1beta.Evaluation.Golden(turns=[ces_v1beta.Evaluation.GoldenTurn(steps=steps)])
    for rid in ("a", "b"):
        evaluation = ces_v1beta.Evaluation(display_name=f"rate {rid}", golden=golden)
        client.create_evaluation(parent=APP, evaluation=evaluation, evaluation_id=rid)
    dataset = ces_v1beta.EvaluationDataset(display_name="smoke", evaluations=[f"{APP}/evaluations/a"])
    client.create_evaluation_dataset(parent=APP, evaluation_dataset=dataset, evaluation_dataset_id="smoke")
    daily = ces_v1beta.ScheduledEvaluationRun.SchedulingConfig(
        frequency=ces_v1beta.ScheduledEvaluationRun.SchedulingConfig.Frequency.DAILY, start_time="2027-01-01T02:00:00Z"
    )
    requests = {
        "of-a": ces_v1beta.RunEvaluationRequest(app=APP, evaluations=[f"{APP}/evaluations/a"]),
        "of-smoke": ces_v1beta.RunEvaluationRequest(app=APP, evaluation_dataset=f"{APP}/evaluationDatasets/smoke"),
    }
    for rid, request in requests.items():
        run = ces_v1beta.ScheduledEvaluationRun(display_name=rid, request=request, scheduling_config=daily)
        client.create_scheduled_evaluation_run(parent=APP, scheduled_evaluation_run=run, scheduled_evaluation_run_id=rid)
    return client


def ids(listed: Any) -> list[str]:
    return sorted(str(r.name).rsplit("/", 1)[-1] for r in listed)


def test_evaluations_are_filtered_by_their_datasets(beta: Beta) -> None:
    def listed(flt: str) -> list[str]:
        return ids(beta.list_evaluations(request=ces_v1beta.ListEvaluationsRequest(parent=APP, evaluation_filter=flt)))

    assert listed('evaluation_datasets:"smoke"') == ["a"]
    assert listed(f"evaluation_datasets:{APP}/evaluationDatasets/smoke") == ["a"]  # the full name, as the field holds
    assert listed("evaluation_datasets:other") == []
    assert ids(beta.list_evaluations(parent=APP)) == ["a", "b"]


def test_evaluations_are_filtered_by_their_runs(beta: Beta) -> None:
    def listed(flt: str) -> list[str]:
        return ids(beta.list_evaluations(request=ces_v1beta.ListEvaluationsRequest(parent=APP, evaluation_run_filter=flt)))

    assert listed('create_time > "2000-01-01T00:00:00Z"') == []  # no run yet
    operation = beta.run_evaluation(request=ces_v1beta.RunEvaluationRequest(app=APP, evaluations=[f"{APP}/evaluations/b"]))
    operation.result(timeout=30, polling=fast_polling())
    assert listed('create_time > "2000-01-01T00:00:00Z"') == ["b"]
    assert listed('create_time < "2000-01-01T00:00:00Z"') == []
    assert listed('initiated_by = "emulator@localhost" AND create_time >= "2000-01-01T00:00:00Z"') == ["b"]
    assert listed('initiated_by != "emulator@localhost"') == []
    both = ces_v1beta.ListEvaluationsRequest(
        parent=APP, evaluation_filter="evaluation_datasets:smoke", evaluation_run_filter='initiated_by="emulator@localhost"'
    )
    assert ids(beta.list_evaluations(request=both)) == []  # a is in smoke, b has the run: both must hold


def test_scheduled_runs_are_filtered_by_what_they_run(beta: Beta) -> None:
    def listed(flt: str) -> list[str]:
        return ids(
            beta.list_scheduled_evaluation_runs(request=ces_v1beta.ListScheduledEvaluationRunsRequest(parent=APP, filter=flt))
        )

    assert listed("request.evaluations:a") == ["of-a"]
    assert listed("request.evaluations:b") == []
    assert listed("request.evaluation_dataset:smoke") == ["of-smoke"]
    assert listed(f'request.evaluation_dataset:"{APP}/evaluationDatasets/smoke"') == ["of-smoke"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda b: b.list_evaluations(request={"parent": APP, "filter": "x"}), "filter is deprecated on ListEvaluations"),
        (
            lambda b: b.list_evaluations(request={"parent": APP, "evaluation_filter": "display_name:x"}),
            "unsupported field 'display_name' in evaluationFilter: supported are evaluation_datasets",
        ),
        (
            lambda b: b.list_evaluations(request={"parent": APP, "evaluation_filter": "evaluation_datasets=smoke"}),
            "unsupported operator '=' on evaluation_datasets in evaluationFilter: use :",
        ),
        (
            lambda b: b.list_evaluations(request={"parent": APP, "evaluation_run_filter": "create_time > yesterday"}),
            "'yesterday' is not an RFC 3339 time",
        ),
        (
            lambda b: b.list_evaluations(request={"parent": APP, "evaluation_filter": "evaluation_datasets:a OR x:b"}),
            "the emulator takes terms FIELD OP VALUE joined by AND",
        ),
        (
            lambda b: b.list_scheduled_evaluation_runs(request={"parent": APP, "filter": "display_name:x"}),
            "supported are request.evaluations, request.evaluation_dataset",
        ),
        (
            lambda b: b.list_evaluation_datasets(request={"parent": APP, "filter": "evaluations:x"}),
            "unsupported field 'evaluations' in filter: supported are display_name, name, create_time, update_time",
        ),
    ],
    ids=["deprecated", "field", "operator", "time", "or", "scheduled-field", "undocumented"],
)
def test_what_the_protos_do_not_document_is_refused_saying_what_is(beta: Beta, call: Callable[[Beta], Any], message: str) -> None:
    with pytest.raises(exceptions.BadRequest) as caught:
        list(call(beta))
    assert message in str(caught.value)


_TERM = st.tuples(
    st.sampled_from(
        [
            "evaluation_datasets",
            "create_time",
            "initiated_by",
            "app_version_display_name",
            "request.evaluations",
            "request.evaluation_dataset",
            "display_name",
        ]
    ),
    st.sampled_from([":", "=", "!=", "<", ">=", "~"]),
    st.sampled_from(["smoke", '"a b"', "2026-01-01T00:00:00Z", "yesterday", f"{APP}/evaluationDatasets/smoke", '"', ""]),
).map("".join)
_FILTER_TEXT = st.one_of(
    st.text(alphabet='abcdeilnorstuv_.:=!<>" ()AND-0123456789TZ/', max_size=60),
    st.lists(_TERM, min_size=1, max_size=3).map(" AND ".join),
)
_RESOURCE = st.fixed_dictionaries(
    {},
    optional={
        "evaluationDatasets": st.lists(st.sampled_from([f"{APP}/evaluationDatasets/smoke", "x"]), max_size=2),
        "evaluationRuns": st.lists(st.sampled_from([f"{APP}/evaluationRuns/r1", "gone"]), max_size=2),
        "request": st.fixed_dictionaries({}, optional={"evaluations": st.lists(st.text(max_size=8), max_size=2)}),
    },
)
_RUNS = {f"{APP}/evaluationRuns/r1": {"createTime": "2026-01-01T00:00:00Z", "initiatedBy": "a@b.c"}}


@given(
    st.sampled_from(["evaluations", "scheduledEvaluationRuns", "evaluationDatasets"]),
    st.sampled_from(["filter", "evaluationFilter", "evaluationRunFilter"]),
    _FILTER_TEXT,
    st.lists(_RESOURCE, max_size=3),
)
def test_any_filter_text_is_a_list_or_a_400(collection: str, param: str, text: str, resources: list[dict[str, Any]]) -> None:
    """Whatever a client sends as a filter, the emulator answers a list or INVALID_ARGUMENT, never a 500."""
    try:
        keep = listing(collection, {param: text}, _RUNS.get).keep
    except RpcError as exc:
        assert exc.status == "INVALID_ARGUMENT", exc
        return
    for resource in resources:
        assert keep is None or isinstance(keep(resource), bool)


# --- every list the emulator serves: filter, orderBy, paging, and its default order --------------

LOCATION = "projects/p/locations/us"
_AUTHORS = ("alice@acme.example", "bob@acme.example")


def _call(client: httpx.Client, method: str, path: str, token: str = "", **kw: Any) -> httpx.Response:
    return client.request(method, path, headers={"authorization": f"Bearer {token}"} if token else {}, **kw)


def _every(client: httpx.Client, path: str, field: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Every item of a list, page by page; AssertionError on anything but 200."""
    out: list[dict[str, Any]] = []
    token = ""
    for _ in range(100):
        answer = client.get(path, params={**params, **({"pageToken": token} if token else {})})
        assert answer.status_code == 200, answer.text
        out += answer.json().get(field, [])
        token = answer.json().get("nextPageToken", "")
        if not token:
            return out
    raise AssertionError("more than 100 pages")


@pytest.fixture(scope="module")
def written() -> Iterator[tuple[httpx.Client, list[dict[str, Any]]]]:
    """An app written by two people (creates, updates and deletes of tools and an agent) and its
    changelogs, oldest first."""
    with BackgroundServer(auto_create_apps=True) as server, httpx.Client(base_url=f"{server.url}/v1/") as client:
        code = 'def f(x: str) -> dict:\n    """F."""\n    return {}\n'
        for i, author in enumerate(_AUTHORS * 3):
            body = {"pythonFunction": {"name": f"f{i}", "pythonCode": code.replace("f(", f"f{i}(")}}
            assert _call(client, "POST", f"{APP}/tools", author, params={"toolId": f"t{i}"}, json=body).status_code == 200
        for i in (0, 3):
            patch = {"pythonFunction": {"name": f"f{i}", "pythonCode": code.replace("f(", f"f{i}(") + "# edited\n"}}
            assert _call(client, "PATCH", f"{APP}/tools/t{i}", _AUTHORS[i % 2], json=patch).status_code == 200
        assert (
            _call(
                client,
                "POST",
                f"{APP}/agents",
                "bob@acme.example",
                params={"agentId": "my-agent"},
                json={"displayName": "My agent", "llmAgent": {}},
            ).status_code
            == 200
        )
        assert _call(client, "DELETE", f"{APP}/tools/t5", "alice@acme.example").status_code == 200
        yield client, _every(client, f"{APP}/changelogs", "changelogs", {"orderBy": "name"})


def _listed(client: httpx.Client, **params: Any) -> list[str]:
    return [c["name"].rsplit("/", 1)[-1] for c in _every(client, f"{APP}/changelogs", "changelogs", params)]


def test_changelogs_are_filtered_as_the_discovery_document_says(written: tuple[httpx.Client, list[dict[str, Any]]]) -> None:
    """ListChangelogs' filter (ces.v1.json): action, resource_type, resource_name, author, create_time;
    ':' a case-insensitive partial match, '=' an exact case-sensitive one; the document's own examples."""
    client, logs = written
    ids = {c["name"].rsplit("/", 1)[-1]: c for c in logs}

    def having(test: Callable[[dict[str, Any]], bool]) -> list[str]:
        return [i for i, c in ids.items() if test(c)]

    assert {c["action"] for c in logs} == {"Create", "Update", "Delete"}
    assert _listed(client, filter="action:update") == having(lambda c: c["action"] == "Update") != []
    assert _listed(client, filter='action="Create"') == having(lambda c: c["action"] == "Create")
    assert _listed(client, filter='action="create"') == []  # '=' is case-sensitive
    assert _listed(client, filter="resource_type:agent") == having(lambda c: c["resourceType"] == "Agent") != []
    assert _listed(client, filter="resource_name:my-agent") == having(lambda c: c["resource"].endswith("/my-agent"))
    assert _listed(client, filter="author:alice@acme.example") == having(lambda c: c["author"] == "alice@acme.example")
    middle = logs[len(logs) // 2]["createTime"]
    assert _listed(client, filter=f'create_time > "{middle}"') == having(lambda c: c["createTime"] > middle) != []
    # a Timestamp as proto3 JSON prints it, with nanoseconds, on every Python the project supports
    assert _listed(client, filter='create_time > "2000-01-01T00:00:00.123456789Z"') == list(ids)
    both = f'create_time <= "{middle}" AND resource_type:tool'
    assert _listed(client, filter=both) == having(lambda c: c["createTime"] <= middle and c["resourceType"] == "Tool")


@pytest.mark.parametrize(
    ("params", "said"),
    [
        ({"filter": "garbage"}, "the emulator takes terms FIELD OP VALUE joined by AND"),
        ({"filter": "colour:red"}, "unsupported field 'colour' in filter: supported are action, resource_type"),
        ({"filter": "action < x"}, "unsupported operator '<' on action"),
        ({"filter": "create_time > yesterday"}, "'yesterday' is not an RFC 3339 time"),
        ({"orderBy": "no_such_field"}, "unsupported orderBy 'no_such_field': supported are name, create_time"),
        ({"orderBy": "name sideways"}, "unsupported orderBy"),
        ({"lastTenResults": "true"}, 'Unknown name "lastTenResults": Cannot bind query parameter'),
    ],
)
def test_what_a_changelog_list_cannot_honour_is_refused(
    written: tuple[httpx.Client, list[dict[str, Any]]], params: dict[str, str], said: str
) -> None:
    answer = written[0].get(f"{APP}/changelogs", params=params)
    assert answer.status_code == 400 and answer.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert said in answer.json()["error"]["message"]


def test_changelogs_come_oldest_first_unless_asked(written: tuple[httpx.Client, list[dict[str, Any]]]) -> None:
    """CES documents no default order for ListChangelogs: the emulator's is by name, which for changelogs
    is oldest first, so a client that takes the first as the newest is caught here, not in production."""
    client, logs = written
    times = [c["createTime"] for c in logs]
    assert times == sorted(times) and len(logs) > 3
    assert _listed(client) == [c["name"].rsplit("/", 1)[-1] for c in logs]
    assert _listed(client, orderBy="create_time desc", pageSize=3) == [c["name"].rsplit("/", 1)[-1] for c in reversed(logs)]
    assert _listed(client, orderBy="name desc") == _listed(client, orderBy="create_time desc")


_CHANGELOG_FIELDS = {"action": "action", "resource_type": "resourceType", "resource_name": "resource", "author": "author"}
_CHANGELOG_TERM = st.tuples(
    st.sampled_from([*_CHANGELOG_FIELDS, "create_time", "colour", "name"]),
    st.sampled_from([":", "=", "!=", "<", ">", "<=", ">=", "~"]),
    st.sampled_from(["update", "Update", "Create", "tool", "Tool", "alice", '"bob@acme.example"', "t1", "my-agent", ""]),
)
_ORDER_FIELD = st.tuples(
    st.sampled_from(["name", "create_time", "author", "update_time"]), st.sampled_from(["", " asc", " desc", " up"])
)


def _text_matches(op: str, value: str, got: str) -> bool:
    if op == ":":
        return value.lower() in got.lower()
    return (got == value) == (op == "=")


def _model(logs: list[dict[str, Any]], terms: list[tuple[str, str, str]], middle: str) -> list[dict[str, Any]] | None:
    """What ListChangelogs' documented filter keeps (None: INVALID_ARGUMENT), written from the document alone."""
    kept = list(logs)
    for field, op, raw in terms:
        value = raw.strip('"')
        if field == "create_time":
            if op not in ("=", "!=", "<", ">", "<=", ">="):
                return None
            at = {
                "=": lambda a: a == middle,
                "!=": lambda a: a != middle,
                "<": lambda a: a < middle,
                ">": lambda a: a > middle,
                "<=": lambda a: a <= middle,
                ">=": lambda a: a >= middle,
            }[op]
            kept = [c for c in kept if at(c["createTime"])]
        elif field in _CHANGELOG_FIELDS and op in (":", "=", "!=") and value:
            kept = [c for c in kept if _text_matches(op, value, str(c[_CHANGELOG_FIELDS[field]]))]
        else:
            return None
    return kept


@given(
    terms=st.lists(_CHANGELOG_TERM, max_size=3),
    order=st.lists(_ORDER_FIELD, max_size=2),
    size=st.integers(min_value=1, max_value=5),
)
def test_any_changelog_filter_and_order_agree_with_the_documented_semantics(
    written: tuple[httpx.Client, list[dict[str, Any]]],
    terms: list[tuple[str, str, str]],
    order: list[tuple[str, str]],
    size: int,
) -> None:
    """Generated filter and orderBy texts: a list that the documented semantics give (in the asked order,
    across pages), or INVALID_ARGUMENT where they give none; never a 500."""
    client, logs = written
    middle = logs[len(logs) // 2]["createTime"]
    text = " AND ".join(f"{f} {op} {middle!r}".replace("'", '"') if f == "create_time" else f"{f}{op}{v}" for f, op, v in terms)
    order_by = ", ".join(f + d for f, d in order)
    expected = _model(logs, terms, middle)
    valid_order = all(f in ("name", "create_time") and d != " up" for f, d in order)
    params = {"pageSize": size, **({"filter": text} if text else {}), **({"orderBy": order_by} if order_by else {})}
    first = client.get(f"{APP}/changelogs", params=params)
    if expected is None or not valid_order:
        assert first.status_code == 400 and first.json()["error"]["status"] == "INVALID_ARGUMENT", (text, order_by, first.text)
        return
    got = _every(client, f"{APP}/changelogs", "changelogs", params)
    assert sorted(c["name"] for c in got) == sorted(c["name"] for c in expected), (text, order_by)
    keys = [({"name": "name", "create_time": "createTime"}[f], d == " desc") for f, d in order] or [("name", False)]
    for a, b in itertools.pairwise(got):  # each neighbour pair in the asked order: the first key that differs decides
        for key, desc in keys:
            if a[key] != b[key]:
                assert (a[key] > b[key]) == desc, (order_by, a[key], b[key])
                break


def test_apps_are_filtered_ordered_and_paged() -> None:
    """ListApps takes filter and orderBy (ces.v1.json): "name desc" is descending, an unknown field 400."""
    with (
        BackgroundServer(apps=[f"{LOCATION}/apps/{a}" for a in ("b", "c", "a")]) as server,
        httpx.Client(base_url=f"{server.url}/v1/") as client,
    ):

        def names(**params: Any) -> list[str]:
            return [a["name"].rsplit("/", 1)[-1] for a in _every(client, f"{LOCATION}/apps", "apps", params)]

        assert names() == ["a", "b", "c"]
        assert names(orderBy="name desc", pageSize=1) == ["c", "b", "a"]
        assert names(filter='name:"apps/b"') == ["b"]
        assert names(filter='create_time > "2000-01-01T00:00:00Z"', orderBy="name desc") == ["c", "b", "a"]
        for params in ({"orderBy": "no_such_field"}, {"filter": "no_such_field=1"}, {"filter": "a OR b"}):
            refused = client.get(f"{LOCATION}/apps", params=params)
            assert refused.status_code == 400 and refused.json()["error"]["status"] == "INVALID_ARGUMENT", params


def test_operations_are_paged_and_filtered() -> None:
    """ListOperations (google.longrunning): pageSize and pageToken page, filter takes done; it has no
    orderBy (a parameter the method lacks is refused, as Google's front ends do), and
    returnPartialSuccess is UNIMPLEMENTED as its documentation says."""
    with BackgroundServer(operation_delay=0) as server, httpx.Client(base_url=f"{server.url}/v1/") as client:
        for i in range(5):
            assert client.post(f"{LOCATION}/apps", params={"appId": f"a{i}"}, json={"displayName": f"A{i}"}).status_code == 200
        every = _every(client, f"{LOCATION}/operations", "operations", {})
        assert len(every) == 5
        one = client.get(f"{LOCATION}/operations", params={"pageSize": 1}).json()
        assert len(one["operations"]) == 1 and one["nextPageToken"]
        paged = _every(client, f"{LOCATION}/operations", "operations", {"pageSize": 2})
        assert [o["name"] for o in paged] == [o["name"] for o in every]
        assert len(_every(client, f"{LOCATION}/operations", "operations", {"filter": "done = true"})) == 5
        assert _every(client, f"{LOCATION}/operations", "operations", {"filter": "done = false"}) == []
        refused = client.get(f"{LOCATION}/operations", params={"orderBy": "name desc"})
        assert refused.status_code == 400 and "Cannot bind query parameter" in refused.json()["error"]["message"]
        partial = client.get(f"{LOCATION}/operations", params={"returnPartialSuccess": "true"})
        assert partial.status_code == 501 and partial.json()["error"]["status"] == "UNIMPLEMENTED"


def _beta_ids(emulator: BackgroundServer, collection: str, **params: Any) -> list[str]:
    with httpx.Client(base_url=f"{emulator.url}/v1beta/") as client:
        return [r["name"].rsplit("/", 1)[-1] for r in _every(client, f"{APP}/{collection}", collection, params)]


def test_evaluation_lists_order_as_documented(emulator: BackgroundServer, beta: Beta) -> None:
    """The v1beta lists' orderBy: "name", "create_time" and "update_time"; time fields descending, name
    ascending; "update_time" when none is asked for (ces.v1beta.json); the scheduled runs also take
    next_scheduled_execution (ascending) and last_completed_run.create_time (descending)."""
    beta.update_evaluation(
        evaluation=ces_v1beta.Evaluation(name=f"{APP}/evaluations/a", description="touched"),
        update_mask=field_mask_pb2.FieldMask(paths=["description"]),
    )
    assert _beta_ids(emulator, "evaluations") == ["a", "b"]  # a was updated last
    assert _beta_ids(emulator, "evaluations", orderBy="update_time") == ["a", "b"]
    assert _beta_ids(emulator, "evaluations", orderBy="create_time") == ["b", "a"]  # descending
    assert _beta_ids(emulator, "evaluations", orderBy="create_time desc", pageSize=1) == ["b", "a"]
    assert _beta_ids(emulator, "evaluations", orderBy="name") == ["a", "b"]
    assert _beta_ids(emulator, "scheduledEvaluationRuns", orderBy="next_scheduled_execution") == ["of-a", "of-smoke"]
    assert sorted(_beta_ids(emulator, "scheduledEvaluationRuns", orderBy="last_completed_run.create_time")) == [
        "of-a",
        "of-smoke",
    ]
    with httpx.Client(base_url=f"{emulator.url}/v1beta/") as client:
        for collection, order in [
            ("evaluations", "create_time asc"),
            ("evaluations", "name desc"),
            ("evaluationDatasets", "colour"),
        ]:
            refused = client.get(f"{APP}/{collection}", params={"orderBy": order})
            assert refused.status_code == 400 and refused.json()["error"]["status"] == "INVALID_ARGUMENT", order


def test_last_ten_results_are_given_when_asked(emulator: BackgroundServer, beta: Beta) -> None:
    """ListEvaluations' lastTenResults: "Whether to include the last 10 evaluation results for each
    evaluation in the response" (Evaluation.last_ten_results, newest first); runs and results lists page."""
    for _ in range(2):
        run = beta.run_evaluation(request=ces_v1beta.RunEvaluationRequest(app=APP, evaluations=[f"{APP}/evaluations/a"]))
        run.result(timeout=30, polling=fast_polling())
    with httpx.Client(base_url=f"{emulator.url}/v1beta/") as client:
        plain = {e["name"]: e for e in client.get(f"{APP}/evaluations").json()["evaluations"]}
        assert not any("lastTenResults" in e for e in plain.values())
        asked = {e["name"]: e for e in client.get(f"{APP}/evaluations", params={"lastTenResults": "true"}).json()["evaluations"]}
        ten = asked[f"{APP}/evaluations/a"]["lastTenResults"]
        assert len(ten) == 2 and ten[0]["createTime"] >= ten[1]["createTime"]
        assert "lastTenResults" not in asked[f"{APP}/evaluations/b"]
        results = _every(client, f"{APP}/evaluations/a/results", "evaluationResults", {"pageSize": 1})
        assert [r["name"] for r in results] == [r["name"] for r in ten]
        runs = _every(client, f"{APP}/evaluationRuns", "evaluationRuns", {"pageSize": 1, "orderBy": "create_time"})
        assert len(runs) == 2 and runs[0]["createTime"] >= runs[1]["createTime"]
        assert client.get(f"{APP}/evaluationRuns", params={"orderBy": "name desc"}).status_code == 400
        assert client.get(f"{APP}/evaluationRuns", params={"filter": "state = RUNNING"}).status_code == 400
