"""A real redis-server: the task store's history bound, and the waiting connection pool.

``RedisTaskStore(history_max_messages=N)`` keeps the newest N messages of a task like the
in-memory store, while versions and the event stream are unchanged. ``pooled_redis`` makes a
command that finds every connection busy wait for one (up to its timeout) where redis-py's
default pool fails it at once with ``MaxConnectionsError``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
import redis.asyncio
import redis.exceptions
from a2a.server.cluster import TaskVersion, VersionedEvent
from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import (
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from redis.asyncio import BlockingConnectionPool

from arena_core.memory_cluster_state import InMemoryVersionedTaskStore
from arena_core.redis_state import RedisClients, RedisConfig, RedisTaskEventStream, RedisTaskStore
from arena_core.redis_state.connection import pooled_redis
from support.redis_server import RedisServer

CONTEXT = ServerCallContext()


@pytest_asyncio.fixture
async def clients(redis_server: RedisServer, redis_namespace: str) -> AsyncIterator[RedisClients]:
    config = RedisConfig(url=redis_server.url, namespace=redis_namespace, block_ms=200)
    connected = RedisClients.connect(config)
    yield connected
    await connected.close()


def _task(history_size: int, state: TaskState = TaskState.TASK_STATE_WORKING) -> Task:
    history = [
        Message(
            message_id=f"m{index}",
            role=Role.ROLE_USER if index % 2 == 0 else Role.ROLE_AGENT,
            parts=[Part(text=f"text {index}")],
            task_id="t1",
        )
        for index in range(history_size)
    ]
    reply = Message(message_id="reply", role=Role.ROLE_AGENT, parts=[Part(text="latest reply")])
    return Task(id="t1", context_id="ctx", status=TaskStatus(state=state, message=reply), history=history)


def _ids(task: Task) -> list[str]:
    return [message.message_id for message in task.history]


def _update(task: Task) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=task.status)


def _key() -> str:
    return f"test-pool-{uuid.uuid4().hex}"


# --- RedisTaskStore(history_max_messages=...) --------------------------------------------


@pytest.mark.asyncio
async def test_redis_store_keeps_the_newest_messages(clients: RedisClients) -> None:
    store = RedisTaskStore(clients, history_max_messages=4)
    previous = TaskVersion.MISSING
    versions: list[TaskVersion] = []
    saved: list[Task] = []
    for turn in range(1, 7):
        task = _task(2 * turn)
        saved.append(task)
        previous = await store.save(task, event=task, prev=None, prev_version=previous, context=CONTEXT)
        versions.append(previous)
        stored = await store.get("t1", CONTEXT)
        assert stored is not None
        assert _ids(stored.task) == [f"m{index}" for index in range(max(0, 2 * turn - 4), 2 * turn)]
        assert stored.version == previous
    assert versions == [TaskVersion(index) for index in range(1, 7)]
    stored = await store.get("t1", CONTEXT)
    assert stored is not None
    assert _ids(stored.task) == ["m8", "m9", "m10", "m11"]
    assert stored.task.status.message.message_id == "reply"
    assert stored.task.status.state == TaskState.TASK_STATE_WORKING
    # The caller's tasks keep their whole history.
    assert [len(task.history) for task in saved] == [2, 4, 6, 8, 10, 12]


@pytest.mark.asyncio
async def test_redis_store_without_a_bound_keeps_every_message(clients: RedisClients) -> None:
    store = RedisTaskStore(clients)
    previous = TaskVersion.MISSING
    for turn in range(1, 7):
        task = _task(2 * turn)
        previous = await store.save(task, event=None, prev=None, prev_version=previous, context=CONTEXT)
    stored = await store.get("t1", CONTEXT)
    assert stored is not None
    assert _ids(stored.task) == [f"m{index}" for index in range(12)]
    assert stored.version == previous


@pytest.mark.asyncio
async def test_redis_store_and_memory_store_agree(clients: RedisClients) -> None:
    stores = [
        RedisTaskStore(clients, history_max_messages=4),
        InMemoryVersionedTaskStore(history_max_messages=4),
    ]
    results: list[tuple[bytes, TaskVersion]] = []
    for store in stores:
        previous = TaskVersion.MISSING
        for turn in range(1, 9):
            task = _task(2 * turn)
            previous = await store.save(task, event=task, prev=None, prev_version=previous, context=CONTEXT)
        stored = await store.get("t1", CONTEXT)
        assert stored is not None
        results.append((stored.task.SerializeToString(deterministic=True), stored.version))
    assert results[0] == results[1]


@pytest.mark.asyncio
async def test_redis_store_events_are_all_streamed(clients: RedisClients) -> None:
    store = RedisTaskStore(clients, history_max_messages=4)
    stream = RedisTaskEventStream(clients)
    first = _task(2)
    previous = await store.save(
        first, event=first, prev=None, prev_version=TaskVersion.MISSING, context=CONTEXT
    )
    for turn in range(2, 8):
        task = _task(2 * turn)
        previous = await store.save(
            task, event=_update(task), prev=None, prev_version=previous, context=CONTEXT
        )
    done = _task(16, TaskState.TASK_STATE_COMPLETED)
    last = await store.save(done, event=_update(done), prev=None, prev_version=previous, context=CONTEXT)
    assert last == TaskVersion(8)

    async def collect() -> list[VersionedEvent]:
        return [event async for event in stream.subscribe("t1", after=TaskVersion.MISSING)]

    events = await asyncio.wait_for(collect(), timeout=10)
    assert [event.version for event in events] == [TaskVersion(index) for index in range(1, 9)]
    assert isinstance(events[0].event, Task)
    assert _ids(events[0].event) == ["m0", "m1"]
    assert all(isinstance(event.event, TaskStatusUpdateEvent) for event in events[1:])
    final = events[-1].event
    assert isinstance(final, TaskStatusUpdateEvent)
    assert final.status.state == TaskState.TASK_STATE_COMPLETED
    stored = await store.get("t1", CONTEXT)
    assert stored is not None
    assert _ids(stored.task) == ["m12", "m13", "m14", "m15"]
    assert stored.version == last


# --- pooled_redis -------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_redis_clients_use_waiting_pools(clients: RedisClients) -> None:
    for client in (clients.commands, clients.blocking):
        pool = client.connection_pool
        assert isinstance(pool, BlockingConnectionPool)
        assert pool.max_connections == clients.config.max_connections
        assert pool.timeout == clients.config.timeout_s
    assert await clients.commands.ping()


@pytest.mark.asyncio
async def test_busy_pool_makes_commands_wait(redis_server: RedisServer) -> None:
    client = pooled_redis(redis_server.url, max_connections=2, timeout_s=5, socket_timeout_s=5)
    try:
        results = await asyncio.gather(*(client.blpop([_key()], 0.2) for _ in range(8)))
        assert results == [None] * 8
        assert await client.ping()
    finally:
        await client.aclose()


@pytest.mark.asyncio
async def test_default_pool_refuses_commands_when_busy(redis_server: RedisServer) -> None:
    """What pooled_redis avoids: redis-py's plain pool fails at once when it is exhausted."""
    client = redis.asyncio.Redis.from_url(redis_server.url, max_connections=2, socket_timeout=5)
    try:
        results = await asyncio.gather(
            *(client.blpop([_key()], 0.2) for _ in range(8)), return_exceptions=True
        )
        refused = [r for r in results if isinstance(r, BaseException)]
        assert refused, results
        assert all(isinstance(r, redis.exceptions.MaxConnectionsError) for r in refused), results
        assert results.count(None) == len(results) - len(refused)
        assert results.count(None) >= 2
    finally:
        await client.aclose()


async def _blpop(client: redis.asyncio.Redis, key: str, seconds: float) -> object:
    """BLPOP as a coroutine (redis-py types it as a bare Awaitable)."""
    return await client.blpop([key], seconds)


async def _wait_until_blocked(observer: redis.asyncio.Redis, count: int) -> None:
    deadline = time.monotonic() + 10
    while True:
        info = await observer.info("clients")
        if int(info["blocked_clients"]) >= count:
            return
        assert time.monotonic() < deadline, "the blocking command never reached the server"
        await asyncio.sleep(0.01)


@pytest.mark.asyncio
async def test_waiting_for_a_connection_gives_up_after_the_timeout(redis_server: RedisServer) -> None:
    client = pooled_redis(redis_server.url, max_connections=1, timeout_s=0.2, socket_timeout_s=5)
    observer = redis.asyncio.Redis.from_url(redis_server.url)
    key = _key()
    try:
        holder = asyncio.create_task(_blpop(client, key, 2))
        await _wait_until_blocked(observer, 1)
        with pytest.raises(redis.exceptions.ConnectionError) as raised:
            await client.get(_key())
        assert not isinstance(raised.value, redis.exceptions.MaxConnectionsError)
        assert "No connection available" in str(raised.value)
        # It gave up after its own wait, while the only connection was still busy.
        assert not holder.done()
        assert await asyncio.wait_for(holder, timeout=10) is None
        # Once the connection is free again, commands go through.
        assert await client.get(key) is None
    finally:
        await client.aclose()
        await observer.aclose()


@pytest.mark.asyncio
async def test_a_waiting_command_gets_the_connection_when_it_is_freed(redis_server: RedisServer) -> None:
    client = pooled_redis(redis_server.url, max_connections=1, timeout_s=5, socket_timeout_s=5)
    observer = redis.asyncio.Redis.from_url(redis_server.url)
    key = _key()
    try:
        holder = asyncio.create_task(_blpop(client, key, 0.3))
        await _wait_until_blocked(observer, 1)
        # RPUSH waits for the only connection, which the BLPOP gives back when it times out.
        assert await client.rpush(key, "x") == 1
        assert holder.done()
        assert await holder is None
        assert await client.lpop(key) == b"x"
    finally:
        await client.aclose()
        await observer.aclose()
