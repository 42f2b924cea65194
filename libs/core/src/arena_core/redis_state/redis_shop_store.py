"""``RedisShopStore``: the support desk's back office of each conversation, in Redis.

One JSON string per conversation key (caller and contextId;
:meth:`~arena_core.redis_state.keys.RedisKeys.shop_state`), written whole by each turn that
acted, and expiring ``ttl_s`` after the last turn that read or wrote it (``GETEX ... PX`` on
every load), like the conversation's history beside it. See :mod:`arena_core.shop_store`.
"""

from __future__ import annotations

from arena_core.redis_state.connection import RedisClients, arena_errors
from arena_core.shop_store import ShopStore, decode_state
from arena_core.support_desk import ShopState


class RedisShopStore(ShopStore):
    """Back offices shared by every defender replica."""

    def __init__(self, clients: RedisClients, *, ttl_s: float = 3600.0) -> None:
        self._redis = clients.commands
        self._keys = clients.keys
        self._ttl_ms = max(1, int(ttl_s * 1000))

    async def load(self, key: str) -> ShopState | None:
        async with arena_errors("loading a support-desk state"):
            raw = await self._redis.getex(self._keys.shop_state(key), px=self._ttl_ms)
        return None if raw is None else decode_state(raw, key)

    async def save(self, key: str, state: ShopState) -> None:
        async with arena_errors("saving a support-desk state"):
            await self._redis.set(self._keys.shop_state(key), state.model_dump_json(), px=self._ttl_ms)


__all__ = ["RedisShopStore"]
