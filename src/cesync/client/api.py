"""The CES REST client (async httpx): the app's resources, retries, one error tree.

Reads come back as :class:`cesync.api.resource.Resource` records (``resources``, ``read``);
``list_all`` and ``get`` give the raw JSON for callers that need every listed item as
the server sent it. Errors are the typed tree of :mod:`cesync.errors`, chosen by the
``google.rpc.Status`` of the answer; a write's error is returned in its ``Written``.

Requests are paced to the environment's quota and slow down on a quota refusal
(:mod:`cesync.client.pacing`); a quota refusal (a 429 naming the quota) was not carried
out, so it is sent again when its turn comes, for up to ``RetryPolicy.quota_patience``
seconds, outside the budget of attempts below.

Retries follow AIP-194 (Google's guidance on retrying API errors): only UNAVAILABLE, DEADLINE_EXCEEDED,
RESOURCE_EXHAUSTED (waiting at least its ``RetryInfo`` delay) and connection
failures, with exponential backoff and full jitter; never INVALID_ARGUMENT,
FAILED_PRECONDITION, NOT_FOUND, PERMISSION_DENIED, UNAUTHENTICATED, INTERNAL, and
never executeTool. A write whose request may have reached the server is resent,
but its answer is returned as a ``Written`` with ``retried`` set: an ABORTED,
NOT_FOUND or ALREADY_EXISTS may then be the server meeting our own earlier
attempt, which only the caller can settle (by reading the resource). Every retry
is announced in one line (what, why, how long) through ``notify``.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import re
import ssl
import sys
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, wait_random_exponential

from ..api.jsonvalue import JsonValueError, loads
from ..api.kinds import ResourceKind, by_collection, kind_of_name
from ..api.paths import api_version
from ..api.resource import Resource
from ..core.scrubber import Scrubber, clip
from ..errors import ApiError, BadReply, CesyncError, TransportError
from ..escape import output
from .pacing import Pacer, Quota, is_quota_refusal
from .replies import quota_limit, quota_line, retry_delay, retry_line, to_error, transient

log = logging.getLogger(__name__)  # one line per HTTP call with --verbose (method, path, status, time)


def _ms(started: float) -> float:
    return (time.monotonic() - started) * 1000


__all__ = ["CesClient", "RetryPolicy", "Written"]

T = TypeVar("T")
ALT = {"$alt": "json;enum-encoding=int"}
PAGE_SIZE = 1000
MAX_PAGES = 1000  # a million resources of one kind: far beyond an app's quota
_USERINFO = re.compile(r"//[^/@\s]*@")


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 6
    initial: float = 0.2
    maximum: float = 10.0
    quota_patience: float = 600.0  # how long a request refused over quota is sent again before it fails


@dataclass(frozen=True)
class Written:
    """What a create, patch or delete came to.

    ``retried``: the request went out more than once, so an error may answer our
    own earlier attempt whose reply was lost (see the module docstring).
    """

    body: dict[str, Any] = field(default_factory=dict)
    error: ApiError | None = None
    retried: bool = False

    @property
    def etag(self) -> str:
        """The resource's new etag after a create or update ("" after a delete or an error)."""
        return str(self.body.get("etag", ""))

    def unwrap(self) -> dict[str, Any]:
        """The answer, or the error raised: for callers that do not settle lost replies."""
        if self.error is not None:
            raise self.error
        return self.body


def stderr_line(line: str, scrubber: Scrubber) -> None:
    # a quota line names the server's metric and limit: inert as everything cli.err prints
    print(output(scrubber.scrub(line)), file=sys.stderr, flush=True)  # looked up per call: a progress bar may redirect stderr


def _unscrubbed_line(line: str) -> None:  # a client not made by connect(), which gives the run's scrubber
    stderr_line(line, Scrubber())


def _verify(base_url: str) -> ssl.SSLContext | bool:
    """httpx's verification for https; for a plain-http endpoint (an emulator) a context that loads no
    CA bundle (tens of milliseconds per command) and, requiring a verified certificate, trusts nothing."""
    return True if not base_url.startswith("http://") else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def _no_userinfo(text: str) -> str:
    return _USERINFO.sub("//", text)


class _NoCookies(httpx.Cookies):
    """An empty cookie jar that stays empty."""

    def extract_cookies(self, response: httpx.Response) -> None:
        pass


class _Http(httpx.AsyncClient):
    """httpx's client without cookies. CES sets none and cesync sends none, but httpx copied
    every answer into urllib's cookie machinery to look for some: an eighth of the client's
    CPU per call. Kept as a jar that stays empty, so a Set-Cookie is never sent back."""

    def __init__(self, **kwargs: Any) -> None:
        self._no_cookies = _NoCookies()
        super().__init__(**kwargs)

    @property
    def cookies(self) -> httpx.Cookies:
        return self._no_cookies

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        pass


class CesClient:
    """One app's tools and toolsets over REST. The transport is passed in (httpx style)."""

    def __init__(
        self,
        base_url: str,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        auth: httpx.Auth | None = None,
        retry: RetryPolicy | None = None,
        timeout: float = 60.0,
        max_connections: int = 32,
        notify: Callable[[str], None] = _unscrubbed_line,
        quota: Quota | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.retry = retry or RetryPolicy()
        # Set by the first answer of any kind. Until then a refused connection means nothing
        # listens at base_url (an emulator not started, a wrong port): one error with what to
        # check, not a retry line per concurrent call; once a server has answered, a refusal
        # is a restart or a blip and is retried.
        self.answered = False
        self.notify = notify
        self.quota = quota or Quota()
        self.clock = clock
        self.writes = Pacer(self.quota.writes_per_minute, clock=clock, sleep=sleep)  # a GET is a read, the rest writes
        self.reads = Pacer(self.quota.reads_per_minute, clock=clock, sleep=sleep)
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
        try:
            self.http = _Http(
                base_url=self.base_url,
                transport=transport,  # None: httpx's own, with the proxies of the environment as httpx reads them
                http2=True,  # where the server offers it (ALPN): CES's endpoints do; a plain-http emulator speaks 1.1
                verify=_verify(self.base_url),
                auth=auth,
                timeout=timeout,
                limits=limits,
                headers={"x-goog-api-client": "cesync/0.1"},
            )
        except (ImportError, ValueError) as exc:  # socks5:// without socksio, a scheme httpx has no transport for
            raise CesyncError(
                "cannot use the proxy set in the environment (HTTP_PROXY, HTTPS_PROXY or ALL_PROXY): "
                f"{_no_userinfo(str(exc))}; fix or unset the variable"
            ) from None

    async def __aenter__(self) -> CesClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    # --- plumbing -----------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        resource: str,
        *,
        params: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> httpx.Request:
        return self.http.build_request(
            method,
            f"/{api_version(path)}/{path}",
            params={**(params or {}), **ALT},
            json=body,
            headers={"x-goog-request-params": f"parent={resource}"},
            timeout=httpx.Timeout(timeout) if timeout else httpx.USE_CLIENT_DEFAULT,
        )

    async def _call(
        self,
        method: str,
        path: str,
        operation: str,
        resource: str,
        *,
        params: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """One call, paced; refused over quota, sent again in its turn until quota_patience has passed."""
        pacer = self.reads if method == "GET" else self.writes
        first_refusal: float | None = None
        while True:
            turn = await pacer.acquire()
            try:
                result = await self._send(method, path, operation, resource, params=params, body=body, timeout=timeout)
            except ApiError as exc:
                if not is_quota_refusal(exc.details, exc.status):
                    if not isinstance(exc, TransportError):
                        pacer.admitted()
                    raise
                now = self.clock()
                first_refusal = now if first_refusal is None else first_refusal
                if pacer.refused(turn, quota_limit(exc)):
                    self.notify(quota_line(exc, pacer))
                if pacer.next_turn() - first_refusal > self.retry.quota_patience:  # its next turn would come too late
                    raise type(exc)(
                        f"{exc.message} (refused over quota for {now - first_refusal:.0f} s; other callers in the project "
                        "may be using it: run again later, or ask for more quota)",
                        code=exc.code,
                        status=exc.status,
                        operation=exc.operation,
                        resource=exc.resource,
                        details=exc.details,
                    ) from None
                continue
            pacer.admitted()
            return result

    async def _send(
        self,
        method: str,
        path: str,
        operation: str,
        resource: str,
        *,
        params: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        started = time.monotonic()
        try:
            response = await self.http.send(self.request(method, path, resource, params=params, body=body, timeout=timeout))
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            log.debug("%s %s: cannot connect (%s) after %.0f ms", method, path, type(exc).__name__, _ms(started))
            if isinstance(exc, httpx.ConnectError) and not self.answered and _refused(exc):
                raise TransportError(self._nobody_listens(), final=True, operation=operation, resource=resource) from None
            raise TransportError(
                f"cannot reach {self.base_url}: {type(exc).__name__}: {exc}", operation=operation, resource=resource
            ) from None
        except httpx.TransportError as exc:
            log.debug("%s %s: connection broke (%s) after %.0f ms", method, path, type(exc).__name__, _ms(started))
            raise TransportError(
                f"the connection to {self.base_url} broke before the answer came: {type(exc).__name__}: {exc}",
                sent=True,
                operation=operation,
                resource=resource,
            ) from None
        self.answered = True
        log.debug("%s %s -> %s in %.0f ms", method, path, response.status_code, _ms(started))
        if response.status_code >= 300:  # a redirect is no success either: the request was not carried out
            raise to_error(response, operation, resource)
        try:
            data = loads(response.content) if response.content else {}
        except JsonValueError as exc:
            raise TransportError(
                f"the server answered with something that is not a CES reply (HTTP {response.status_code}): {exc}",
                operation=operation,
                resource=resource,
            ) from None
        if not isinstance(data, dict):
            raise BadReply(
                f"the server answered with a JSON {type(data).__name__}, not an object (HTTP {response.status_code})",
                operation=operation,
                resource=resource,
            )
        return data

    async def _retrying(self, fn: Callable[[], Awaitable[T]]) -> T:
        """fn, retried per the policy (tenacity runs every attempt, the first included): a transient
        error is tried again after a jittered wait (never shorter than the server's RetryInfo), each
        wait announced; a quota refusal has waited its patience out already (see _call), and a
        transport error that says it is final (nobody listens) is not tried again."""
        exponential = wait_random_exponential(multiplier=self.retry.initial, max=self.retry.maximum)

        def again(exc: BaseException) -> bool:
            return transient(exc) and not (isinstance(exc, TransportError) and exc.final)

        def wait(state: RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            hinted = retry_delay(exc.details) if isinstance(exc, ApiError) else None
            return max(hinted or 0.0, float(exponential(state)))  # full jitter, never below RetryInfo

        def announce(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            if isinstance(exc, ApiError):
                log.debug("retry: %s, attempt %d of %d", exc, state.attempt_number, self.retry.attempts)
                self.notify(retry_line(exc, state.upcoming_sleep, state.attempt_number, self.retry.attempts))

        async for attempt in AsyncRetrying(
            retry=retry_if_exception(again),
            wait=wait,
            stop=stop_after_attempt(max(1, self.retry.attempts)),
            before_sleep=announce,
            reraise=True,
        ):
            with attempt:
                return await fn()
        raise AssertionError("unreachable")

    async def _write(self, fn: Callable[[], Awaitable[dict[str, Any]]]) -> Written:
        sent = 0

        async def counted() -> dict[str, Any]:
            nonlocal sent
            sent += 1
            return await fn()

        try:
            return Written(await self._retrying(counted), None, sent > 1)
        except ApiError as exc:
            return Written({}, exc, sent > 1)

    def _nobody_listens(self) -> str:
        if self.base_url.startswith("http://"):
            check = (
                "is the emulator running (`cesync emulator` prints its address), and is this the endpoint you meant "
                "(--endpoint, CES_EMULATOR_HOST, endpoint: in cesync.yaml)?"
            )
        else:
            check = (
                "is this the endpoint you meant (--endpoint, endpoint: in cesync.yaml), and does a proxy or firewall refuse it?"
            )
        return f"cannot reach {self.base_url}: the connection was refused (nothing listens there); {check}"

    # --- calls -----------------------------------------------------------------------------

    async def list_all(self, parent: str, collection: str) -> list[dict[str, Any]]:
        """Every resource of a collection: one request per page of 1000, never one per resource."""
        listed = by_collection(collection)
        params = {"filter": listed.list_filter} if listed is not None and listed.list_filter else {}
        return await self.pages(f"{parent}/{collection}", collection, f"list {collection}", parent, params)

    async def pages(
        self, path: str, key: str, operation: str, resource: str, params: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """Every item of a paged list (``key`` of each page), following ``nextPageToken``."""
        return [item async for page in self.each_page(path, key, operation, resource, params) for item in page]

    async def each_page(
        self, path: str, key: str, operation: str, resource: str, params: dict[str, Any] | None = None
    ) -> AsyncGenerator[list[dict[str, Any]], None]:
        """The items (``key``) of each page in turn, asking for the next only when the caller wants more.
        A token answered twice, or more than MAX_PAGES pages, is refused: a list that never ends
        would keep plan running (and asking) forever."""
        seen: set[str] = set()
        token = ""
        for _ in range(MAX_PAGES):
            query: dict[str, Any] = {"pageSize": PAGE_SIZE, **(params or {}), **({"pageToken": token} if token else {})}
            page = await self._retrying(partial(self._call, "GET", path, operation, resource, params=query))
            found, token = page.get(key, []), page.get("nextPageToken", "")
            if not isinstance(found, list) or not all(isinstance(x, dict) for x in found):
                raise BadReply(f"the reply's {key!r} is not a list of objects", operation=operation, resource=resource)
            if not isinstance(token, str):
                raise BadReply("the reply's nextPageToken is not a string", operation=operation, resource=resource)
            yield found
            if not token:
                return
            if token in seen:
                raise BadReply(
                    f"the server answered page token {_short(token)} a second time (after {len(seen) + 1} pages): "
                    "the list would never end; stopping, nothing was changed",
                    operation=operation,
                    resource=resource,
                )
            seen.add(token)
        raise BadReply(
            f"the list did not end after {MAX_PAGES} pages of up to {PAGE_SIZE}: stopping, nothing was changed",
            operation=operation,
            resource=resource,
        )

    async def list_page(self, path: str, operation: str, resource: str, params: dict[str, Any]) -> dict[str, Any]:
        """One page of a list call (retried as every read)."""
        return await self._retrying(partial(self._call, "GET", path, operation, resource, params=params))

    async def resources(self, parent: str, kind: ResourceKind) -> list[Resource]:
        """Every listed resource of one kind, as records: unfiltered, ids from their names
        (each checked to be one of this app's: see ResourceKind.id_in)."""
        operation = f"list {kind.collection}"
        return [_record(kind, body, parent, operation) for body in await self.list_all(parent, kind.collection)]

    async def read(self, name: str) -> Resource:
        """One resource by its full name; NotFound (typed) when it does not exist."""
        kind = kind_of_name(name)
        body = await self.get(name)
        if body.get("name", name) != name:
            raise BadReply(f"the server answered with {_short(body.get('name'))}", operation=f"get {kind.name}", resource=name)
        return Resource(kind, name.rsplit("/", 1)[-1], body)

    async def get(self, name: str) -> dict[str, Any]:
        kind = _kind(name)
        return await self._retrying(lambda: self._call("GET", name, f"get {kind}", name))

    async def create(self, parent: str, collection: str, rid: str, body: dict[str, Any]) -> Written:
        kind = by_collection(collection)
        singular = kind.name if kind else collection[:-1]
        name = f"{parent}/{collection}/{rid}"
        params = {kind.id_param if kind else f"{singular}Id": rid}
        return await self._write(
            lambda: self._call("POST", f"{parent}/{collection}", f"create {singular}", name, params=params, body=body)
        )

    async def patch(self, name: str, body: dict[str, Any], mask: list[str]) -> Written:
        kind = _kind(name)
        params = {"updateMask": ",".join(mask)}
        return await self._write(lambda: self._call("PATCH", name, f"update {kind}", name, params=params, body=body))

    async def delete(self, name: str, etag: str | None, force: bool = False) -> Written:
        kind = _kind(name)
        params: dict[str, Any] = {}
        if etag:
            params["etag"] = etag
        if force:
            params["force"] = "true"
        return await self._write(lambda: self._call("DELETE", name, f"delete {kind}", name, params=params))

    async def execute(self, parent: str, request: dict[str, Any]) -> dict[str, Any]:
        """executeTool is never retried automatically (it may have side effects)."""
        resource = request.get("tool") or (request.get("toolsetTool") or {}).get("toolset") or parent
        # A tool may run for minutes (its own timeout); the call waits longer than any tool.
        return await self._call("POST", f"{parent}:executeTool", "execute tool", resource, body=request, timeout=EXECUTE_TIMEOUT)


EXECUTE_TIMEOUT = 330.0


def _refused(exc: httpx.ConnectError) -> bool:
    """Whether the connection was refused (ECONNREFUSED), whichever transport raised it."""
    seen: BaseException | None = exc
    for _ in range(8):  # a short chain: __cause__ / __context__ of the transport's OSError
        if seen is None:
            break
        if isinstance(seen, ConnectionRefusedError):
            return True
        seen = seen.__cause__ or seen.__context__
    text = str(exc)
    return f"[Errno {errno.ECONNREFUSED}]" in text or "connection refused" in text.lower()


def _record(kind: ResourceKind, body: dict[str, Any], parent: str, operation: str) -> Resource:
    rid = kind.id_in(parent, body.get("name"))
    if rid is None:
        raise BadReply(
            f"the server listed a {kind} named {_short(body.get('name'))}, which is not a {kind} of {parent} "
            f"({parent}/{kind.collection}/ID, the ID of letters, digits, '-' and '_'): nothing was changed",
            operation=operation,
            resource=parent,
        )
    return Resource(kind, rid, body)


def _short(value: object) -> str:
    """A server's value in a message: quoted, and cut when long."""
    return clip(repr(value), 120)


def _kind(name: str) -> str:
    return kind_of_name(name).name
