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
``arena:[ns:]conv:{conv}``                 list    conversation history, JSON ``{"role", "content"}``;
                                                   ``{conv}`` is the conversation's key, its caller
                                                   and contextId: ``a:{ctx}`` (anonymous) or
                                                   ``u:{caller}/{ctx}`` (arena_core.caller_scope)
``arena:[ns:]conv:{conv}:bytes``           string  byte count of that list
``arena:[ns:]shop:{conv}``                 string  the support desk's back office of one conversation
                                                   (ShopState JSON, ``support-desk`` profiles)
``arena:[ns:]orch:queue``                  stream  queued matches: ``c`` campaign id, ``i`` match index,
                                                   ``t`` trace context (JSON); consumer group
                                                   ``arena-orchestrators``
``arena:[ns:]orch:campaigns``              zset    campaign ids by creation time (ms)
``arena:[ns:]orch:unfinished``             set     ids of campaigns still accounting for matches
``arena:[ns:]orch:active``                 set     ids of campaigns whose status is not final (the
                                                   ARENA_ORCHESTRATOR_MAX_ACTIVE_CAMPAIGNS count)
``arena:[ns:]orch:campaign:{id}``          hash    ``spec``, ``created``, ``total``, ``enqueued``, ``done``,
                                                   ``status``, ``started``, ``finished``, ``max_tokens``
``arena:[ns:]orch:campaign:{id}:results``  hash    match id -> MatchRecord JSON (written once: HSETNX)
``arena:[ns:]orch:campaign:{id}:summaries`` hash   match id -> MatchSummary JSON
``arena:[ns:]orch:campaign:{id}:order``    zset    match ids by index (pagination of the match list)
``arena:[ns:]orch:campaign:{id}:counts``   hash    outcome counters, campaign-wide and per cell, tokens
``arena:[ns:]orch:campaign:{id}:errors``   list    the latest error summaries (capped)
``arena:[ns:]orch:campaign:{id}:running``  hash    match id -> who plays it now (JSON)
``arena:[ns:]orch:campaign:{id}:attempts`` hash    match id -> attempts started
``arena:[ns:]orch:campaign:{id}:slots[:{defender}]`` zset  concurrency leases: match id by lease expiry (ms)
``arena:[ns:]orch:campaign:{id}:enqueue``  string  lock held while a replica enqueues the campaign
=========================================  ======  ====================================================

Owners, contextIds and conversation keys are escaped (``%``-encoding of ``:`` and
``%``) so they can never forge another key (``conv:a:x`` is stored as ``conv:a%3Ax``).
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

    def conversation(self, key: str) -> str:
        """The history list of one conversation, by its key (caller and contextId:
        :func:`arena_core.caller_scope.conversation_key`)."""
        return f"{self.base}conv:{_escape(key)}"

    def conversation_bytes(self, key: str) -> str:
        """The byte counter of one conversation's history."""
        return f"{self.conversation(key)}:bytes"

    def shop_state(self, key: str) -> str:
        """The support desk's back office of one conversation (JSON), by its key (as
        :meth:`conversation`)."""
        return f"{self.base}shop:{_escape(key)}"

    # --- orchestrator -------------------------------------------------------------

    @property
    def match_queue(self) -> str:
        """The stream of queued matches, shared by every orchestrator replica."""
        return f"{self.base}orch:queue"

    @property
    def campaigns(self) -> str:
        """Campaign ids by creation time."""
        return f"{self.base}orch:campaigns"

    @property
    def unfinished_campaigns(self) -> str:
        """Ids of campaigns not every match of which is accounted for (for resuming)."""
        return f"{self.base}orch:unfinished"

    @property
    def active_campaigns(self) -> str:
        """Ids of campaigns whose status is not final (queued or running)."""
        return f"{self.base}orch:active"

    def campaign(self, campaign_id: str) -> str:
        """The hash of one campaign's spec and counters."""
        return f"{self.base}orch:campaign:{_escape(campaign_id)}"

    def campaign_part(self, campaign_id: str, part: str) -> str:
        """One of a campaign's other keys: ``results``, ``summaries``, ``order``, ``counts``,
        ``errors``, ``running``, ``attempts``, ``slots``, ``enqueue``."""
        if part not in CAMPAIGN_PARTS:
            raise ValueError(f"unknown campaign key part '{part}'")
        return f"{self.campaign(campaign_id)}:{part}"

    def campaign_slots(self, campaign_id: str, defender: str | None = None) -> str:
        """Concurrency leases of a campaign, or of one of its defenders."""
        key = self.campaign_part(campaign_id, "slots")
        return key if defender is None else f"{key}:{_escape(defender)}"


MATCH_QUEUE_GROUP = "arena-orchestrators"
"""The consumer group of :attr:`RedisKeys.match_queue`."""

CAMPAIGN_PARTS: tuple[str, ...] = (
    "results",
    "summaries",
    "order",
    "counts",
    "errors",
    "running",
    "attempts",
    "slots",
    "enqueue",
)


__all__ = ["CAMPAIGN_PARTS", "MATCH_QUEUE_GROUP", "PREFIX", "RedisKeys"]
