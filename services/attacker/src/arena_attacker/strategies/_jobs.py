"""Running a strategy's independent jobs (streams, branches, sends) together or in turn.

Used by ``pair`` (its streams) and ``tap`` (a level's attacker, evaluator and
send calls).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


async def run_jobs(jobs: Sequence[Callable[[], Awaitable[T]]], *, parallel: bool) -> list[T]:
    """Run ``jobs`` concurrently or one after another; results in job order.

    The first exception cancels the jobs still running and is raised as it
    is (not as an exception group), so AttackerRefused reaches the runner.
    """
    if not parallel:
        return [await job() for job in jobs]
    tasks = [asyncio.ensure_future(job()) for job in jobs]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


__all__ = ["run_jobs"]
