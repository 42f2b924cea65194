"""Agents started while Redis is unreachable: unready, failing fast, never hanging."""

from __future__ import annotations

import time

import httpx
import pytest

from arena.local_services import free_port
from conftest import InProcessArena

pytestmark = pytest.mark.asyncio


async def test_defender_without_redis_is_unready_and_fails_fast(arena: InProcessArena) -> None:
    arena.add_model()
    dead = f"redis://127.0.0.1:{free_port()}/0"
    url = arena.add_defender(redis_url=dead, redis_timeout_s=0.5)
    ready = await arena.http.get(f"{url}/readyz")
    assert ready.status_code == 503
    assert "Redis at redis://127.0.0.1" in ready.json()["reason"]
    started = time.monotonic()
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}},
    }
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=arena.apps["defender"])) as http:
        reply = (await http.post("http://defender/", json=body, headers={"A2A-Version": "1.0"})).json()
    assert time.monotonic() - started < 10
    assert "shared state unavailable" in reply["error"]["message"]


async def test_redis_password_is_not_shown_in_readiness(arena: InProcessArena) -> None:
    arena.add_model()
    url = arena.add_defender(redis_url=f"redis://user:s3cret@127.0.0.1:{free_port()}/0", redis_timeout_s=0.5)
    reason = (await arena.http.get(f"{url}/readyz")).json()["reason"]
    assert "s3cret" not in reason
    assert "user:***@" in reason
