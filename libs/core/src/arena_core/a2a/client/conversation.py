"""One conversation with a target: its ids, and how to continue it whatever way the agent ended its turn."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from arena_core.a2a.client.attachments import Attachment
from arena_core.a2a.client.target import A2ATarget
from arena_core.a2a.client.target_reply import TargetReply


class TargetConversation:
    """One conversation with a target (one A2A context): remembers its ids, knows how to continue.

    Agents end a turn in one of three ways; each is continued in the same context, so the
    target keeps the conversation's history:

    * the task stays open (``input-required``, as the arena's defender does): the next
      message continues that task, carrying both ``taskId`` and ``contextId`` (a2a-python#1206:
      a follow-up with only ``taskId`` is given a fresh context);
    * the task ends (``completed``, ``rejected``: one task per turn): the next message carries
      the ``contextId`` only, and the agent opens a new task in that context;
    * a bare Message instead of a task: likewise, with the Message's ``contextId`` (the one
      sent when it has none; an agent that never names a context gets a new one each turn).

    Every reply's text is what the agent said in that turn (:class:`TargetReply`).
    """

    def __init__(
        self,
        target: A2ATarget,
        *,
        metadata: Mapping[str, Any] | None = None,
        extensions: tuple[str, ...] = (),
    ) -> None:
        """``metadata`` and ``extensions`` go with every message (see :meth:`A2ATarget.send`)."""
        self._target = target
        self._metadata = metadata
        self._extensions = extensions
        self.context_id: str | None = None
        self.task_id: str | None = None
        self._task_open = False

    def reset(self) -> None:
        """Forget the ids: the next message starts a new conversation."""
        self.context_id = None
        self.task_id = None
        self._task_open = False

    async def send(self, text: str, attachments: Sequence[Attachment] = ()) -> TargetReply:
        """Send ``text`` (and ``attachments``) in this conversation (a new one after
        :meth:`reset`), as the class doc says."""
        task_id = self.task_id if self._task_open else None
        reply = await self._target.send(
            text,
            context_id=self.context_id,
            task_id=task_id,
            metadata=self._metadata,
            extensions=self._extensions,
            attachments=attachments,
        )
        self.context_id = reply.context_id or self.context_id
        self.task_id = reply.task_id
        self._task_open = reply.open
        return reply


__all__ = ["TargetConversation"]
