"""The client's pacing to CES's quota: a fake clock, and simulated quotas (no time passes)."""

from __future__ import annotations

import asyncio
import heapq
import random
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cesync.client.api import CesClient, RetryPolicy
from cesync.client.pacing import DECREASE, Pacer, Quota, Turn, is_quota_refusal
from cesync.emulator import EmbeddedTransport, QuotaConfig, Store, create_app
from cesync.emulator.quota import TokenBucket, quota_error


class Middle(random.Random):
    """Jitter's draw, always the least (no delay): gaps of exactly 1/rate, for the tests that count them."""

    def uniform(self, a: float, b: float) -> float:
        return a


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)  # the send time is what acquire returns; the simulation moves the clock


def now(coro: Coroutine[Any, Any, Turn]) -> Turn:
    """Run acquire, whose sleep (the fake clock's) never suspends, to its turn."""
    try:
        coro.send(None)
    except StopIteration as stop:
        turn: Turn = stop.value
        return turn
    raise AssertionError("the coroutine suspended")


def test_told_the_quota_requests_leave_at_its_rate_and_no_faster() -> None:
    clock = FakeClock()
    pacer = Pacer(600, clock=clock, sleep=clock.sleep, rng=Middle())  # 10 a second
    times = [now(pacer.acquire()).at for _ in range(8)]
    assert times == pytest.approx([0.0] * 5 + [0.0, 0.1, 0.2])  # half a second's worth at once, then the rate
    assert clock.slept == pytest.approx([0.1, 0.2])
    clock.now = 10.0  # a pause earns half a second's worth again, no more
    assert [now(pacer.acquire()).at for _ in range(7)] == pytest.approx([10.0] * 5 + [10.0, 10.1])


def test_not_told_nothing_waits_until_the_first_refusal() -> None:
    clock = FakeClock()
    pacer = Pacer(None, clock=clock, sleep=clock.sleep, rng=Middle())
    turns = [now(pacer.acquire()) for _ in range(100)]
    assert [t.at for t in turns] == [0.0] * 100
    for _ in range(40):
        pacer.admitted()
    clock.now = 0.5
    assert pacer.refused(turns[0])
    assert pacer.rate == pytest.approx(40 * DECREASE)  # what got in over the last second, cut


def test_a_refusal_cuts_the_rate_once_per_round_and_admissions_climb_back_to_the_ceiling() -> None:
    clock = FakeClock()
    pacer = Pacer(600, clock=clock, sleep=clock.sleep, rng=Middle())
    sent = [now(pacer.acquire()) for _ in range(16)]
    clock.now = 2.0
    assert pacer.refused(sent[0]) and pacer.rate == pytest.approx(10 * DECREASE)
    assert not any(pacer.refused(t) for t in sent[1:])  # sent before the cut: already answered by it
    assert pacer.rate == pytest.approx(10 * DECREASE) and pacer.refusals == 16
    later = now(pacer.acquire())
    assert later.at >= 2.0 + 1 / pacer.rate - 1e-9  # a pause after the cut
    for _ in range(1000):
        pacer.admitted()
    assert pacer.rate == pytest.approx(10.0)  # back at the quota told, never above it
    clock.now = 3.0
    assert pacer.refused(later)  # sent after the cut: a new round


def test_a_turn_given_before_a_cut_is_given_up_for_one_at_the_new_pace() -> None:
    clock = FakeClock()
    pacer = Pacer(600, clock=clock, sleep=clock.sleep, rng=Middle())
    early = [pacer.reserve() for _ in range(10)]  # waiting: 0.0 .. 0.9
    assert pacer.refused(early[0])
    assert not any(pacer.current(t) for t in early)
    clock.now = early[5].at
    retaken = now(pacer.acquire())
    assert pacer.current(retaken) and retaken.at >= 1 / (10 * DECREASE) - 1e-9


def test_quota_refusals_are_told_from_other_429s() -> None:
    quota = quota_error("ces.googleapis.com/write_requests", 600, "p", "us")
    assert is_quota_refusal(quota.details, "RESOURCE_EXHAUSTED")
    info_only = [d for d in quota.details if d["@type"].endswith("ErrorInfo")]
    assert is_quota_refusal(info_only, "RESOURCE_EXHAUSTED")
    assert not is_quota_refusal([], "RESOURCE_EXHAUSTED")  # a bare 429 stays a transient error
    retry_info = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"}]
    assert not is_quota_refusal(retry_info, "RESOURCE_EXHAUSTED")
    assert not is_quota_refusal(quota.details, "UNAVAILABLE")


@dataclass
class Apply:
    """One cesync apply in the simulation: ``writes`` to make, at most ``parallel`` in flight."""

    pacer: Pacer
    writes: int
    parallel: int = 16
    done: int = 0
    refused: int = 0
    finished_at: float = 0.0
    queued: int = field(init=False)

    def __post_init__(self) -> None:
        self.queued = self.writes


def ideal(n: int, per_minute: int, rtt: float, parallel: int = 16) -> float:
    """The least time n writes take: at the quota, or at parallel / rtt when that is slower (Little's law)."""
    return n / min(per_minute / 60, parallel / rtt)


def simulate(applies: list[Apply], clock: FakeClock, per_minute: int, rtt: float, named: bool = True) -> None:
    """Each apply's writes against one project's quota (the emulator's token bucket), the clock moved
    from event to event: a write is sent at the time its pacer gives, reaches the quota half a round trip
    later, and its answer (admitted or refused, naming the limit when ``named``) comes back after the other half."""
    server = TokenBucket(per_minute / 60, per_minute / 60, clock)
    events: list[tuple[float, int, str, int, float]] = []
    turns: dict[int, Turn] = {}  # by the sequence number of the event that took it
    seq = 0

    def push(at: float, kind: str, who: int, sent: float = 0.0) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(events, (at, seq, kind, who, sent))

    for who, a in enumerate(applies):
        for _ in range(min(a.parallel, a.writes)):
            a.queued -= 1
            push(0.0, "ready", who)
    steps = 0
    while events:
        steps += 1
        assert steps < 2_000_000, "the simulation does not end"
        at, _, kind, who, sent = heapq.heappop(events)
        clock.now = at
        a = applies[who]
        if kind == "ready":
            turns[seq] = turn = a.pacer.reserve()
            push(turn.at, "send", who, seq)
        elif kind == "send":
            turn = turns[int(sent)]
            if a.pacer.current(turn):
                push(at + rtt / 2, "arrive", who, sent)
            else:
                push(at, "ready", who)  # the pace was cut while it waited: a turn at the new one
        elif kind == "arrive":
            push(at + rtt / 2, "admitted" if server.take() else "refused", who, sent)
        elif kind == "admitted":
            a.pacer.admitted()
            a.done += 1
            a.finished_at = at
            if a.queued:
                a.queued -= 1
                push(at, "ready", who)
        else:
            a.refused += 1
            a.pacer.refused(turns[int(sent)], per_minute if named else None)
            push(at, "ready", who)  # sent again in its turn


@settings(max_examples=25, deadline=None)
@given(per_minute=st.sampled_from([600, 1200, 3000, 6000]), rtt=st.sampled_from([0.02, 0.05, 0.2]))
def test_told_the_quota_one_apply_runs_at_it_and_is_almost_never_refused(per_minute: int, rtt: float) -> None:
    clock = FakeClock()
    n = per_minute // 3  # 20 s at the quota
    a = Apply(Pacer(per_minute, clock=clock, sleep=clock.sleep, rng=Middle()), n)
    simulate([a], clock, per_minute, rtt)
    assert a.done == n and a.finished_at <= 1.05 * ideal(n, per_minute, rtt) + rtt
    assert a.refused <= 0.01 * n


@settings(max_examples=25, deadline=None)
@given(
    per_minute=st.sampled_from([600, 1200, 3000, 6000]),
    rtt=st.sampled_from([0.02, 0.05, 0.2]),
    told=st.booleans(),
    named=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_two_applies_in_one_project_share_the_quota_and_both_finish(
    per_minute: int, rtt: float, told: bool, named: bool, seed: int
) -> None:
    """Both told the quota (each at first sends at all of it) or neither told: they converge to sharing it,
    every write is made, and the slower is done within 1.35x of what the quota allows for both when the
    refusals name the limit, as Google's and the emulator's do (1.5x when they do not)."""
    clock = FakeClock()
    n = per_minute // 2
    quota = per_minute if told else None
    applies = [Apply(Pacer(quota, clock=clock, sleep=clock.sleep, rng=random.Random(seed + i)), n // 2) for i in range(2)]
    simulate(applies, clock, per_minute, rtt, named)
    assert all(a.done == n // 2 for a in applies)
    bound = 1.35 if named else 1.5  # the target (there with plan time added); unnamed limits: looser
    assert max(a.finished_at for a in applies) <= bound * ideal(n, per_minute, rtt, parallel=32) + 1.0


@settings(max_examples=25, deadline=None)
@given(
    per_minute=st.sampled_from([600, 1200, 3000, 6000]),
    rtt=st.sampled_from([0.02, 0.05, 0.2]),
    named=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_not_told_the_quota_an_apply_finds_it(per_minute: int, rtt: float, named: bool, seed: int) -> None:
    clock = FakeClock()
    n = per_minute // 3
    a = Apply(Pacer(None, clock=clock, sleep=clock.sleep, rng=random.Random(seed)), n)
    simulate([a], clock, per_minute, rtt, named)
    assert a.done == n and a.finished_at <= 1.2 * ideal(n, per_minute, rtt) + 1.0


class SharedClock(FakeClock):
    """One clock for the emulator's quota and the client, moved by the client's (one caller's) sleeps."""

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


APP = "projects/p/locations/us/apps/a"
FN = {"pythonFunction": {"pythonCode": "def f(x):\n    return x\n"}}


def _client(clock: SharedClock, server: QuotaConfig, lines: list[str], **kw: Any) -> tuple[CesClient, Any]:
    app = create_app(Store(auto_create_apps=True), quota=server, quota_clock=clock)
    client = CesClient("http://emu", transport=EmbeddedTransport(app), notify=lines.append, clock=clock, sleep=clock.sleep, **kw)
    return client, app


def test_writes_refused_over_quota_are_made_in_turn_outside_the_retry_budget() -> None:
    """One attempt in the budget, a quota of a write a second, ten creates back to back: every one is made,
    none reported as retried (a refused write was not carried out), the pace found from the first refusal."""
    clock, lines = SharedClock(), []
    client, app = _client(clock, QuotaConfig(writes_per_minute=60), lines, retry=RetryPolicy(attempts=1))

    async def go() -> list[Any]:
        async with client:
            return [await client.create(APP, "tools", f"t{i}", FN) for i in range(10)]

    written = asyncio.run(go())
    assert [w.error for w in written] == [None] * 10 and not any(w.retried for w in written)
    refused = app.state.emulator.quota_state.refused["ces.googleapis.com/write_requests"]
    assert refused >= 1 and client.writes.refusals == refused
    assert client.writes.ceiling == pytest.approx(1.0)  # the limit the refusal named
    assert any(line.startswith("quota: CES refused a request over ces.googleapis.com/write_requests") for line in lines)
    assert clock.now >= 8.0  # ten writes at one a second, the first in the bucket


def test_told_the_quota_no_write_is_refused() -> None:
    clock, lines = SharedClock(), []
    client, app = _client(clock, QuotaConfig(writes_per_minute=120), lines, quota=Quota(writes_per_minute=120))

    async def go() -> list[Any]:
        async with client:
            return [await client.create(APP, "tools", f"t{i}", FN) for i in range(20)]

    assert all(w.error is None for w in asyncio.run(go()))
    assert app.state.emulator.quota_state.refused["ces.googleapis.com/write_requests"] == 0 and not lines


def test_a_write_refused_past_the_patience_fails_saying_why() -> None:
    clock, lines = SharedClock(), []
    quota = QuotaConfig(writes_per_minute=1)  # one write a minute
    client, _ = _client(clock, quota, lines, retry=RetryPolicy(quota_patience=30))

    async def go() -> list[Any]:
        async with client:
            return [await client.create(APP, "tools", f"t{i}", FN) for i in range(2)]

    first, second = asyncio.run(go())
    assert first.error is None
    assert second.error is not None and second.error.status == "RESOURCE_EXHAUSTED" and not second.retried
    assert "refused over quota for" in str(second.error)
