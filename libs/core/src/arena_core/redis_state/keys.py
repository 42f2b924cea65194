"""Every Redis key the arena uses, in one place.

All keys start with ``arena:``; an optional namespace (``ARENA_REDIS_NAMESPACE``)
follows, so several arenas (or tests) can share one Redis. Layout:

=========================================  ======  ====================================================
key                                        type    content
=========================================  ======  ====================================================
``arena:[ns:]task:{id}``                   hash    ``o`` owner, ``v`` version (int), ``d`` Task protobuf
                                                   bytes, ``c`` contextId, ``s`` state (int)
``arena:[ns:]task:{id}:events``            stream  one entry per saved event: ``v`` version, ``e``
                                                   StreamResponse protobuf bytes
``arena:[ns:]owner:{owner}:tasks``         zset    task ids by status timestamp (microseconds)
``arena:[ns:]owner:{owner}:ctx:{ctx}``     zset    the same, for one contextId
``arena:[ns:]owner:{owner}:expiry``        zset    task ids by expiry time (ms), to prune the indexes
``arena:[ns:]conv:{ctx}``                  list    conversation history, JSON ``{"role", "content"}``
``arena:[ns:]conv:{ctx}:bytes``            string  byte count of that list
=========================================  ======  ====================================================

Owners and contextIds are escaped (``%``-encoding of ``:`` and ``%``) so they
can never forge another key.
"""

from __future__ import annotations

from dataclasses import dataclass

PREFIX = "arena:"


def _escape(part: str) -> str:
    return part.replace("%", "%25").replace(":", "%3A")


@dataclass(frozen=True, slots=True)
class RedisKeys:
    """Builds key names under ``arena:`` and an optional namespace."""

    namespace: str = ""

    @property
    def base(self) -> str:
        """``arena:`` or ``arena:{namespace}:``."""
        return f"{PREFIX}{_escape(self.namespace)}:" if self.namespace else PREFIX

    def task(self, task_id: str) -> str:
        """The hash holding one task."""
        return f"{self.base}task:{_escape(task_id)}"

    def task_events(self, task_id: str) -> str:
        """The stream of one task's events."""
        return f"{self.task(task_id)}:events"

    def owner_tasks(self, owner: str) -> str:
        """An owner's tasks by status time."""
        return f"{self.base}owner:{_escape(owner)}:tasks"

    def owner_context_tasks(self, owner: str, context_id: str) -> str:
        """An owner's tasks in one context by status time."""
        return f"{self.base}owner:{_escape(owner)}:ctx:{_escape(context_id)}"

    def owner_expiry(self, owner: str) -> str:
        """An owner's tasks by expiry time, for index pruning."""
        return f"{self.base}owner:{_escape(owner)}:expiry"

    def conversation(self, context_id: str) -> str:
        """The history list of one conversation."""
        return f"{self.base}conv:{_escape(context_id)}"

    def conversation_bytes(self, context_id: str) -> str:
        """The byte counter of one conversation's history."""
        return f"{self.conversation(context_id)}:bytes"


__all__ = ["PREFIX", "RedisKeys"]
