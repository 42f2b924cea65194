"""The lifespan of an arena agent app: at shutdown, release the SDK's tasks, then run the app's hooks.

:func:`agent_lifespan` is the Starlette lifespan of
:func:`arena_core.a2a.agent_app.build_agent_app`. Its shutdown runs once uvicorn has
stopped serving (the requests in flight had their grace, see
:mod:`arena_core.http_server`) and while the event loop still runs:

1. **Release the tasks the SDK holds in memory**: tasks parked in ``input-required``
   (a2a-sdk 1.3.0 holds them until ``ARENA_TASK_IDLE_TIMEOUT_S``) and tasks cut
   mid-turn at the end of the grace. The request handler's ``aclose()`` closes each
   task's event queues and then cancels its producer and consumer, in that order,
   bounded by ``release_timeout_s``. One INFO line says how many were released.
   Without this step the event loop's own teardown cancels those asyncio tasks in no
   particular order, and a2a-sdk logs, for every held task, "Dispatcher task is not
   running" (a WARNING) and "cancelled without calling EventQueue.close() first" (INFO,
   twice): 8,000 to 12,000 lines after a busy run, burying every other warning.
   The stored tasks are not touched: a parked task stays ``input-required`` in the
   task store, so with Redis another replica continues it (in memory it goes with
   the process anyway).
2. **Run the** ``on_shutdown`` **hooks** in order (state store, rate limiter, match
   runner, model client...). A hook that raises is logged with its traceback and
   the next one still runs. One INFO line names the hooks that ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager

from a2a.server.request_handlers import DefaultRequestHandlerV2
from starlette.applications import Starlette

ShutdownHook = Callable[[], Awaitable[None]]
"""Closes one resource of the app (a store, a client); awaited once, at shutdown."""

RELEASE_TIMEOUT_S = 10.0
"""The longest releasing the held tasks may take before the hooks run anyway."""

logger = logging.getLogger(__name__)


def held_task_count(handler: DefaultRequestHandlerV2) -> int | None:
    """How many tasks ``handler`` holds in memory and has not finished; None if it cannot say.

    a2a-sdk 1.3.0 has no public count: its ``ActiveTaskRegistry``'s dict is the only
    source. A later SDK that renames it must not break a shutdown, so a missing
    attribute gives None (the count line then says so) rather than an error.
    """
    try:
        held = handler._active_task_registry._active_tasks
    except AttributeError:
        return None
    return sum(1 for task in list(held.values()) if not task.is_finished)


async def release_held_tasks(
    handler: DefaultRequestHandlerV2, *, timeout_s: float = RELEASE_TIMEOUT_S
) -> None:
    """Release every task ``handler`` holds in memory (``handler.aclose()``), logging one line.

    Never raises but for cancellation: a failure or a timeout is logged (WARNING)
    and the shutdown goes on. After this the handler accepts no new task.
    """
    held = held_task_count(handler)
    count = "an unknown number of" if held is None else str(held)
    try:
        async with asyncio.timeout(timeout_s):
            await handler.aclose()
    except TimeoutError:
        logger.warning(
            "shutdown: releasing %s held A2A task(s) took over %g s; the rest go with the process",
            count,
            timeout_s,
        )
        return
    except Exception:
        logger.exception("shutdown: releasing %s held A2A task(s) failed", count)
        return
    if held != 0:
        logger.info(
            "shutdown: released %s A2A task(s) held in memory (parked for input, or cut mid-turn)", count
        )


async def run_shutdown_hooks(hooks: Sequence[ShutdownHook]) -> None:
    """Await each hook in order; one that raises is logged and the others still run.

    Logs one INFO line naming the hooks that ran (and how many failed).
    """
    failed = 0
    for hook in hooks:
        try:
            await hook()
        except Exception:
            failed += 1
            logger.exception("shutdown hook %s failed", _name(hook))
    names = ", ".join(_name(hook) for hook in hooks) or "none"
    logger.info("shutdown hooks ran (%d, %d failed): %s", len(hooks), failed, names)


def agent_lifespan(
    handler: DefaultRequestHandlerV2,
    on_shutdown: Sequence[ShutdownHook] = (),
    *,
    release_timeout_s: float = RELEASE_TIMEOUT_S,
) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    """The lifespan described in the module doc: nothing at start-up; at shutdown,
    :func:`release_held_tasks` then :func:`run_shutdown_hooks`.

    The tasks go first: releasing them must not meet a closed task store or model client.
    """
    hooks = tuple(on_shutdown)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await release_held_tasks(handler, timeout_s=release_timeout_s)
            await run_shutdown_hooks(hooks)

    return lifespan


def _name(hook: ShutdownHook) -> str:
    return str(getattr(hook, "__qualname__", None) or repr(hook))


__all__ = [
    "RELEASE_TIMEOUT_S",
    "ShutdownHook",
    "agent_lifespan",
    "held_task_count",
    "release_held_tasks",
    "run_shutdown_hooks",
]
