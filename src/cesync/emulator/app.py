"""The emulator's HTTP surface: the CES REST API (``/v1/`` and ``/v1beta/``), plus /admin.

One Starlette app serves both ways: over a socket through uvicorn
(``cesync emulator``) and in process through ``httpx.ASGITransport`` (the embedded
backend). ``Emulator`` is composed of one class per family of calls, each in its own
module: crud (an app's resources), apps, versions, changelogs, export_import, derived
(a toolset's tools, tool schemas), integrity (references), on service (the state and
shared lookups); dispatch routes a path to them, admin serves /admin. ``/v1beta/``
serves the same resources as ``/v1/`` (the v1beta messages are v1's plus the app's
evaluationSettings and evaluationPersonas, see beta.py); long-running operations name
their payload types in the version they were asked in.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Awaitable, Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .admin import admin_call
from .apps import Apps
from .crud import Resources
from .derived import Derived
from .dispatch import dispatch
from .errors import RpcError
from .evaluations import EvaluationService
from .execute import Executor
from .export_import import ExportImport
from .faults import FaultConfig, FaultMiddleware, WriteHooks
from .operations import DEFAULT_DELAY as DEFAULT_OPERATION_DELAY
from .operations import Action, Operations
from .partial import parse_fields, project
from .quota import QuotaConfig, QuotaMiddleware, QuotaState
from .store import Store

__all__ = ["Emulator", "create_app"]

VERSIONS = ("v1", "v1beta")

API_METHODS = ("GET", "POST", "PATCH", "DELETE")


class Emulator(Resources, Apps, ExportImport, Derived):
    """The emulator's calls (one base class per family) over one store."""

    def __init__(
        self, store: Store, operation_delay: float = DEFAULT_OPERATION_DELAY, operation_clock: Callable[[], float] = time.time
    ) -> None:
        self.store = store
        self.executor = Executor(self._read_copy, self._tools_copy)
        actions: dict[str, Action] = {
            "create_app": self._do_create_app,
            "delete_app": self._do_delete_app,
            "import_app": self._do_import_app,
            "restore": self._do_restore,
        }
        # runEvaluation replays goldens against the real tools (evaluations.py, golden.py)
        self.evaluations = EvaluationService(store, lambda parent: functools.partial(self.executor.execute, parent))
        actions["evaluation_run"] = self.evaluations.finish
        # a run's operation is done once its replay, in the background, has finished
        ready = {"evaluation_run": self.evaluations.replayed}
        self.operations = Operations(store, actions, operation_delay, operation_clock, ready)
        self.evaluations.settle_operation = self.operations.settle
        self.taught = set()
        self.quota = QuotaConfig()
        self.quota_state = QuotaState()


def create_app(
    store: Store | None = None,
    faults: FaultConfig | None = None,
    *,
    operation_delay: float = DEFAULT_OPERATION_DELAY,
    quota: QuotaConfig | None = None,
    quota_clock: Callable[[], float] = time.monotonic,
    operation_clock: Callable[[], float] = time.time,
) -> Starlette:
    """The emulator as an ASGI app (state in memory unless the store has a file; no quota unless given)."""
    emulator = Emulator(store or Store(), operation_delay, operation_clock)
    if quota is not None:
        emulator.quota = quota
    fault_middleware: list[FaultMiddleware] = []

    def api_route(version: str) -> Callable[[Request], Awaitable[Response]]:
        async def api(request: Request) -> Response:
            request.scope["ces_version"] = version
            try:
                selection = parse_fields(request.query_params["fields"]) if "fields" in request.query_params else None
                request.scope["ces_fields"] = selection  # a list may leave out early what is not selected
                result = await dispatch(emulator, request, request.path_params["path"])
                if selection is not None and not (isinstance(result, Response) and result.media_type != "application/json"):
                    data = json.loads(bytes(result.body)) if isinstance(result, Response) else result
                    return JSONResponse(project(data, selection))
                return result if isinstance(result, Response) else JSONResponse(result)
            except RpcError as exc:
                return JSONResponse(exc.body(), status_code=exc.http)

        return api

    async def admin(request: Request) -> Response:
        try:
            return JSONResponse(await admin_call(emulator, request, fault_middleware))
        except RpcError as exc:
            return JSONResponse(exc.body(), status_code=exc.http)

    endpoints = {v: api_route(v) for v in VERSIONS}
    app = Starlette(
        routes=[
            *(Route(f"/{v}/{{path:path}}", endpoints[v], methods=list(API_METHODS)) for v in VERSIONS),
            Route("/admin/{action:path}", admin, methods=["GET", "POST"]),
        ]
    )
    app.state.emulator = emulator
    config = faults or FaultConfig()
    quota_state = emulator.quota_state  # inside the faults (the last added is outermost): refused after the latency
    app.add_middleware(QuotaMiddleware, config=emulator.quota, state=quota_state, clock=quota_clock)
    app.state.hooks = WriteHooks()  # tests' console users acting mid-call (faults.Injected)
    app.add_middleware(FaultMiddleware, config=config, registry=fault_middleware, hooks=app.state.hooks)
    app.state.faults = config
    return app
