"""Abandoning a task of an A2A agent: ask it to cancel, whatever it answers.

Both clients leave tasks behind: a target's tasks parked in input-required when a match ends
(:meth:`~arena_core.a2a.client.target.A2ATarget.close`), an attacker's task when its match is
abandoned (:func:`~arena_core.a2a.client.attacker.play_remote_match`). The cancel is a courtesy
that frees the agent's resources; a refusal or a failure changes nothing for the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from a2a.client import Client
from a2a.types.a2a_pb2 import CancelTaskRequest

logger = logging.getLogger(__name__)


async def cancel_task_quietly(
    client: Client,
    task_id: str,
    *,
    who: str,
    redact: Callable[[str], str] = str,
    timeout_s: float | None = None,
) -> None:
    """Ask ``who`` (an A2A agent) to cancel ``task_id``; whatever it answers is only logged.

    The caller is abandoning the task, so a refusal (it already ended), a failure, or no
    answer within ``timeout_s`` (when given) changes nothing. ``redact`` cleans the logged
    answer. A cancel of the caller itself still propagates: it is never swallowed here.
    """
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout_s):
            try:
                await client.cancel_task(CancelTaskRequest(id=task_id))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - whatever the agent answers, the task is abandoned
                logger.debug("%s did not cancel task %s: %s", who, task_id, redact(str(exc)))


__all__ = ["cancel_task_quietly"]
