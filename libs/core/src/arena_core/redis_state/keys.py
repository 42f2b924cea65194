"""Every Redis key the arena uses, in one place.

All keys start with ``arena:``; an optional namespace (``ARENA_REDIS_NAMESPACE``)
follows, so several arenas (or tests) can share one Redis. Every key carries a Redis
Cluster hash tag (the part in braces): the keys one script or transaction touches
together share it, so they hash to one slot and the arena runs on Redis Cluster as on
a single Redis (ADR 0022). Layout:

=============================================  ======  ================================================
key                                            type    content
=============================================  ======  ================================================
``arena:[ns:]task:{<id>}``                     hash    ``o`` owner, ``v`` version (int), ``d`` Task
                                                       protobuf bytes, ``c`` contextId, ``s`` state
``arena:[ns:]task:{<id>}:events``              stream  one entry per saved event: ``v`` version, ``e``
                                                       StreamResponse protobuf bytes
``arena:[ns:]owner:{<owner>}:tasks``           zset    task ids by status timestamp (microseconds)
``arena:[ns:]owner:{<owner>}:ctx:<ctx>``       zset    the same, for one contextId
``arena:[ns:]owner:{<owner>}:expiry``          zset    task ids by expiry time (ms), to prune the
                                                       indexes
``arena:[ns:]conv:{<conv>}``                   list    conversation history, JSON ``{"role",
                                                       "content"}``; ``<conv>`` is the conversation's
                                                       key, its caller and contextId: ``a:<ctx>``
                                                       (anonymous) or ``u:<caller>/<ctx>``
                                                       (arena_core.caller_scope)
``arena:[ns:]conv:{<conv>}:bytes``             string  byte count of that list
``arena:[ns:]shop:{<conv>}``                   string  the support desk's back office of one
                                                       conversation (ShopState JSON)
``arena:[ns:]ratelimit:{<origin>}``            string  the GCRA state of one target origin
``arena:[ns:]{orch}:queue``                    stream  queued matches: ``c`` campaign id, ``i`` match
                                                       index, ``t`` trace context (JSON); consumer
                                                       group ``arena-orchestrators``
``arena:[ns:]{orch}:campaigns``                zset    campaign ids by creation time (ms)
``arena:[ns:]{orch}:unfinished``               set     ids of campaigns still accounting for matches
``arena:[ns:]{orch}:active``                   set     ids of campaigns whose status is not final
                                                       (the ARENA_ORCHESTRATOR_MAX_ACTIVE_CAMPAIGNS
                                                       count)
``arena:[ns:]campaign:{<id>}``                 hash    ``campaign``, ``created``, ``total``,
                                                       ``enqueued``, ``done``, ``status``, ``started``,
                                                       ``finished``
``arena:[ns:]campaign:{<id>}:results``         hash    match id -> MatchRecord JSON (written once)
``arena:[ns:]campaign:{<id>}:summaries``       hash    match id -> MatchSummary JSON
``arena:[ns:]campaign:{<id>}:order``           zset    match ids by index (pagination)
``arena:[ns:]campaign:{<id>}:counts``          hash    outcome counters, campaign-wide and per cell
``arena:[ns:]campaign:{<id>}:errors``          list    the latest error summaries (capped)
``arena:[ns:]campaign:{<id>}:running``         hash    match id -> who plays it now (JSON)
``arena:[ns:]campaign:{<id>}:attempts``        hash    match id -> attempts started
``arena:[ns:]campaign:{<id>}:slots[:<def>]``   zset    concurrency leases: match id by lease expiry
``arena:[ns:]campaign:{<id>}:enqueue``         string  lock held while a replica enqueues the campaign
=============================================  ======  ================================================

Slots: one task (hash and events), one owner's indexes, one conversation (history, byte
counter, back office), one campaign (every part) and the orchestrator's shared keys
(queue and campaign sets) each live in one slot. Nothing else is touched together: a
task's save writes its hash and stream in one script and the owner's indexes in a
second on a cluster (one script on a single Redis); a campaign's scripts touch only its
own keys, and the shared sets are updated after them by idempotent commands.

Every part is escaped (``%``-encoding of ``%``, ``:``, ``{`` and ``}``) so no id can
forge another key or move a key's hash tag (``conv:a:x`` is stored as ``conv:{a%3Ax}``).
An empty part in a tag (the anonymous owner, ``""``) is written ``{%}``, since Redis hashes
a key with empty braces as a whole.
Before ADR 0022 the keys had no hash tags and the orchestrator's lived under ``orch:``;
the orchestrator adopts a campaign store of that layout (``arena_orchestrator.legacy_layout``).
"""

from __future__ import annotations

from dataclasses import dataclass

PREFIX = "arena:"


def escape_part(part: str) -> str:
    """``part`` with ``%``, ``:``, ``{`` and ``}`` %-encoded: it cannot end a key part or
    open or close a hash tag."""
    return part.replace("%", "%25").replace(":", "%3A").replace("{", "%7B").replace("}", "%7D")


_escape = escape_part


def _tag(part: str) -> str:
    """``part`` escaped as a hash tag. Redis hashes a key whose first braces are empty as a
    whole, so an empty part (the anonymous owner) is ``{%}``: no escaped part is a lone ``%``."""
    return "{" + (_escape(part) or "%") + "}"


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
        return f"{self.base}task:{_tag(task_id)}"

    def task_events(self, task_id: str) -> str:
        """The stream of one task's events."""
        return f"{self.task(task_id)}:events"

    def _owner(self, owner: str) -> str:
        return f"{self.base}owner:{_tag(owner)}"

    def owner_tasks(self, owner: str) -> str:
        """An owner's tasks by status time."""
        return f"{self._owner(owner)}:tasks"

    def owner_context_tasks(self, owner: str, context_id: str) -> str:
        """An owner's tasks in one context by status time."""
        return f"{self._owner(owner)}:ctx:{_escape(context_id)}"

    def owner_expiry(self, owner: str) -> str:
        """An owner's tasks by expiry time, for index pruning."""
        return f"{self._owner(owner)}:expiry"

    def conversation(self, key: str) -> str:
        """The history list of one conversation, by its key (caller and contextId:
        :func:`arena_core.caller_scope.conversation_key`)."""
        return f"{self.base}conv:{_tag(key)}"

    def conversation_bytes(self, key: str) -> str:
        """The byte counter of one conversation's history."""
        return f"{self.conversation(key)}:bytes"

    def shop_state(self, key: str) -> str:
        """The support desk's back office of one conversation (JSON), by its key (as
        :meth:`conversation`)."""
        return f"{self.base}shop:{_tag(key)}"

    def rate_limit(self, origin: str) -> str:
        """The rate limiter's state for one target origin."""
        return f"{self.base}ratelimit:{_tag(origin)}"

    # --- orchestrator -------------------------------------------------------------

    @property
    def match_queue(self) -> str:
        """The stream of queued matches, shared by every orchestrator replica."""
        return f"{self.base}{{orch}}:queue"

    @property
    def campaigns(self) -> str:
        """Campaign ids by creation time."""
        return f"{self.base}{{orch}}:campaigns"

    @property
    def unfinished_campaigns(self) -> str:
        """Ids of campaigns not every match of which is accounted for (for resuming)."""
        return f"{self.base}{{orch}}:unfinished"

    @property
    def active_campaigns(self) -> str:
        """Ids of campaigns whose status is not final (queued or running)."""
        return f"{self.base}{{orch}}:active"

    @property
    def leaderboard(self) -> str:
        """The leaderboard's entries: a settled campaign's contest counts by campaign id. No
        expiry: the leaderboard outlives the campaigns."""
        return f"{self.base}{{orch}}:leaderboard"

    def campaign(self, campaign_id: str) -> str:
        """The hash of one campaign's spec and counters."""
        return f"{self.base}campaign:{_tag(campaign_id)}"

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


__all__ = ["CAMPAIGN_PARTS", "MATCH_QUEUE_GROUP", "PREFIX", "RedisKeys", "escape_part"]
