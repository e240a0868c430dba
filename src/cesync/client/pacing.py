"""Pacing requests to CES's quota, and adapting to it (additive increase, multiplicative decrease).

CES meters write and read requests per minute per project (Google's CES quota
documentation: about 600 of each by default), shared by every pipeline and person of the project. A client that sends
faster only collects 429s, so cesync paces each kind of request to a rate: the quota it was
told (``quota:`` in cesync.yaml), or, not told, as fast as it goes until the first refusal.

A quota refusal slows the whole client down, not just the refused request: the rate is cut
to ``DECREASE`` times itself (once per round: refusals of requests sent before the last cut
tell nothing new), and every admitted request adds back a little, so that the rate climbs
by ``INCREASE`` of its ceiling a second. Two cesync processes sharing one project's quota
converge, as TCP flows do, to about half each; one alone stays at its quota. A refusal that
names its limit (ErrorInfo's ``quota_limit_value``, as Google's quota errors do) caps the pace
there, told or not.

Each turn is jittered (up to ``JITTER`` of a gap late, never early, so the rate holds over
any stretch): the server's bucket runs dry at moments no client's rhythm predicts, so refusals fall on clients
in proportion to what they send. Without it, two clients at steady rates settle into phases
where one is refused every time and the other never, and the refused one starves.

After a pause (and at the start) half a second's worth of turns is given at once: the reads of
a plan, one per kind, are not spaced out, and the server's bucket (a second's worth) admits them.

No library fits: aiolimiter's AsyncLimiter paces to a fixed rate on the event loop's clock,
with no way to adapt it; the clock and the sleep here are injected, so tests need no time.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

__all__ = ["CES_DEFAULT_QUOTA", "Pacer", "Quota", "Turn", "is_quota_refusal"]

DECREASE = 0.7  # the cut on a refusal (as CUBIC's beta): a sawtooth between 70% and 100% of the quota
INCREASE = 0.1  # the climb, a share of the ceiling (or of the rate at the last cut) per second
JITTER = 0.2  # each turn comes up to this share of a gap late (never early: the rate holds): see below
BURST = 0.5  # seconds of turns a pause earns: within the second's worth CES's bucket holds (as the emulator has it)
MIN_RATE = 1 / 60  # never slower than a request a minute


@dataclass(frozen=True)
class Turn:
    """A request's send time, and the round of the pace it was given at."""

    at: float
    round: int


@dataclass(frozen=True)
class Quota:
    """Requests a minute an environment may send (None or 0: not told; paced only after a refusal)."""

    writes_per_minute: int | None = None
    reads_per_minute: int | None = None


CES_DEFAULT_QUOTA = Quota(600, 600)  # CES's documented defaults: ces.googleapis.com/write_requests, read_requests


def is_quota_refusal(details: list[dict[str, object]], status: str) -> bool:
    """A 429 that names a quota (ErrorInfo RATE_LIMIT_EXCEEDED, or a QuotaFailure): the request was not
    carried out and will be admitted later. A bare RESOURCE_EXHAUSTED stays a transient error."""
    if status != "RESOURCE_EXHAUSTED":
        return False
    for d in details:
        kind = str(d.get("@type", ""))
        if kind.endswith("google.rpc.QuotaFailure"):
            return True
        if kind.endswith("google.rpc.ErrorInfo") and d.get("reason") in ("RATE_LIMIT_EXCEEDED", "RESOURCE_EXHAUSTED"):
            return True
    return False


class Pacer:
    """Hands out send times at most ``rate`` a second, the rate adapted by AIMD."""

    def __init__(
        self,
        per_minute: int | None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.ceiling = per_minute / 60 if per_minute else None  # never faster than the quota told
        self.rate: float | None = self.ceiling  # None: not paced (not told, and nothing refused yet)
        self.clock = clock
        self.sleep = sleep
        self.rng = rng or random.Random()
        self.refusals = 0
        self._next = clock() - BURST  # when the next turn is due: at the start, BURST seconds' worth at once
        self.round = 0  # cuts so far: turns of an earlier round were given at an older pace
        self._cut_at = clock()
        self._step = 0.0  # the climb, tokens a second per second
        self._admitted: deque[float] = deque()  # the last second's admissions, to measure an unpaced rate

    def reserve(self) -> Turn:
        """The next free send time (now when not paced), taken."""
        now = self.clock()
        if self.rate is None:
            return Turn(now, self.round)
        slot = max(now - BURST, self._next)  # a pause earns at most BURST seconds of turns, sent at once
        self._next = slot + 1 / self.rate
        return Turn(max(now, slot + self.rng.uniform(0, JITTER) / self.rate), self.round)  # late, never early

    def next_turn(self) -> float:
        """When the next turn would be given."""
        return max(self.clock(), self._next) if self.rate is not None else self.clock()

    def current(self, turn: Turn) -> bool:
        """Whether a turn was given at the pace now in force (not before a cut)."""
        return turn.round == self.round

    async def acquire(self) -> Turn:
        """Wait for this request's turn. A turn given before a cut is given up for one at the new pace:
        requests waiting when the server refused one must not go out at the old rate."""
        while True:
            turn = self.reserve()
            delay = turn.at - self.clock()
            if delay > 0:
                await self.sleep(delay)
            if self.current(turn):
                return turn

    def admitted(self) -> None:
        """The server took a request (any answer but a quota refusal): climb back toward the ceiling."""
        now = self.clock()
        self._admitted.append(now)
        while self._admitted and self._admitted[0] < now - 1.0:
            self._admitted.popleft()
        if self.rate is not None and self._step and (self.ceiling is None or self.rate < self.ceiling):
            # admissions come `rate` a second: the rate climbs `step` a second, faster the longer nothing is
            # refused (a client left alone when the other finishes is back at the quota in seconds)
            self.rate += self._step * (1 + now - self._cut_at) / self.rate
            if self.ceiling is not None:
                self.rate = min(self.rate, self.ceiling)

    def refused(self, turn: Turn, limit: int | None = None) -> bool:
        """The server refused a request sent in ``turn`` over quota, naming its ``limit`` a minute when it
        does (ErrorInfo's quota_limit_value): the pace never goes above that again. True when this cut the rate."""
        self.refusals += 1
        if limit:
            self.ceiling = min(self.ceiling or math.inf, limit / 60)
        if not self.current(turn):
            return False  # sent at the old pace: already answered by the last cut
        if self.rate is not None:
            base = self.rate
        elif self.ceiling is not None:
            base = self.ceiling
        else:
            base = max(float(len(self._admitted)), 1.0)  # not told, not named: what got in over the last second
        self.rate = max(MIN_RATE, min(base, self.ceiling or math.inf) * DECREASE)
        # the same climb for every client of a quota (what makes AIMD share it fairly): a share of the quota,
        # or, unnamed, of what this one saw get in (at least a request a second per second)
        self._step = INCREASE * self.ceiling if self.ceiling else max(1.0, INCREASE * base)
        self.round += 1
        self._cut_at = self.clock()
        self._next = max(self._next, self.clock() + 1 / self.rate)  # a pause, while the server's bucket refills
        return True
