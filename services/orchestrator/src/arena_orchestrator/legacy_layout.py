"""Adopt the orchestrator state of the key layout before ADR 0022 (no hash tags).

Before the arena ran on Redis Cluster, the orchestrator's keys were ``arena:[ns:]orch:queue``,
``orch:campaigns``, ``orch:unfinished``, ``orch:active`` and ``orch:campaign:<id>[:<part>]``.
A single Redis upgraded in place still holds them: campaigns (finished ones until their
retention ends, unfinished ones still to be played) and the queued matches. This moves them
under the current names once, so an upgrade loses no acknowledged campaign or result:

* each listed campaign's hash and parts are renamed (``RENAMENX``: a key already present under
  the new name is left alone); its leases and queueing lock are not (they lapse by themselves);
* the shared sets are merged into the current ones (a replica of the new version may already
  have written them);
* the queue is renamed with its consumer group and pending entries when there is no current
  queue yet; otherwise its entries are added to the current queue (a match queued twice is
  recorded once: results are written with HSETNX).

Tasks and conversations are not moved: they are short-lived, and a conversation in flight
during an upgrade starts over. Old replicas must be stopped before new ones start (Compose
recreates the orchestrator; the Helm chart's orchestrator Deployment rolls, so in the worst
case a campaign submitted to an old replica during the rollout is adopted at the next
restart of a new one). A Redis Cluster never held the old layout: nothing to do there.
"""

from __future__ import annotations

import logging
from typing import Any

from redis.exceptions import ResponseError

from arena_core.redis_state import RedisClients

logger = logging.getLogger(__name__)

MOVED_PARTS = ("results", "summaries", "order", "counts", "errors", "running", "attempts")
"""A campaign's parts that carry state (leases and the queueing lock lapse by themselves)."""

_QUEUE_COPY_BATCH = 500


def _old_escape(part: str) -> str:
    return part.replace("%", "%25").replace(":", "%3A")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def adopt_legacy_layout(clients: RedisClients) -> int:
    """Move the old layout's orchestrator keys under the current names; return how many
    campaigns were found. Idempotent: a second call finds nothing."""
    if clients.cluster:
        return 0
    redis: Any = clients.commands
    keys = clients.keys
    old = f"{keys.base}orch:"
    old_index, old_unfinished, old_active, old_queue = (
        f"{old}campaigns",
        f"{old}unfinished",
        f"{old}active",
        f"{old}queue",
    )
    if not await redis.exists(old_index, old_unfinished, old_active, old_queue):
        return 0
    ids = {_text(i) for i in await redis.zrange(old_index, 0, -1)}
    ids |= {_text(i) for i in await redis.smembers(old_unfinished)}
    ids |= {_text(i) for i in await redis.smembers(old_active)}
    for campaign_id in sorted(ids):
        old_campaign = f"{old}campaign:{_old_escape(campaign_id)}"
        pairs = [(old_campaign, keys.campaign(campaign_id))]
        pairs += [(f"{old_campaign}:{part}", keys.campaign_part(campaign_id, part)) for part in MOVED_PARTS]
        for source, target in pairs:
            try:
                await redis.renamenx(source, target)
            except ResponseError:
                continue  # "no such key": that part was never written, or has moved already
    # The campaigns have moved before they are listed under the new names: a reader of the
    # new sets never finds an id whose hash is still under the old name.
    if await redis.exists(old_index):
        await redis.zunionstore(keys.campaigns, [keys.campaigns, old_index], aggregate="MIN")
        await redis.delete(old_index)
    for source, target in ((old_unfinished, keys.unfinished_campaigns), (old_active, keys.active_campaigns)):
        if await redis.exists(source):
            await redis.sunionstore(target, [target, source])
            await redis.delete(source)
    # RENAMENX keeps the consumer group and its pending entries; it refuses when a replica of
    # the new version has created the current queue already, and the entries are copied.
    if await redis.exists(old_queue) and not await redis.renamenx(old_queue, keys.match_queue):
        await _copy_queue(redis, old_queue, keys.match_queue)
    logger.warning(
        "adopted %d campaign(s) of the key layout before ADR 0022 under the current key names", len(ids)
    )
    return len(ids)


async def _copy_queue(redis: Any, source: str, target: str) -> None:
    """Append every entry of ``source`` to ``target`` as a new entry, then delete ``source``."""
    start = "-"
    while True:
        entries = await redis.xrange(source, min=start, max="+", count=_QUEUE_COPY_BATCH)
        if not entries:
            break
        async with redis.pipeline(transaction=False) as pipe:
            for _entry_id, fields in entries:
                pipe.xadd(target, fields)
            await pipe.execute()
        if len(entries) < _QUEUE_COPY_BATCH:
            break
        start = "(" + _text(entries[-1][0])
    await redis.delete(source)


__all__ = ["MOVED_PARTS", "adopt_legacy_layout"]
