"""Running cases concurrently through a caller-given call (the only part with I/O)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ApiError
from .match import check
from .schema import Case

__all__ = ["Call", "Result", "run_cases"]


@dataclass(frozen=True)
class Result:
    case: Case
    status: str  # passed | failed | error
    messages: tuple[str, ...] = ()
    seconds: float = 0.0
    answer: dict[str, Any] | None = None


Call = Callable[[Case], Awaitable[dict[str, Any]]]


async def run_cases(cases: list[Case], call: Call, parallelism: int = 4) -> list[Result]:
    gate = asyncio.Semaphore(parallelism)

    async def one(case: Case) -> Result:
        async with gate:
            start = time.perf_counter()
            answer, error = None, None
            try:
                answer = await call(case)
            except ApiError as exc:
                error = exc
            except Exception as exc:  # a bad reference or mock in the test itself
                return Result(case, "error", (str(exc),), time.perf_counter() - start)
            failures = check(case, answer, error)
            return Result(case, "failed" if failures else "passed", tuple(failures), time.perf_counter() - start, answer)

    return list(await asyncio.gather(*(one(c) for c in cases)))
