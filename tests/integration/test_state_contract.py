"""One contract for both state implementations: in memory, and Redis (a real redis-server).

Covers a2a-sdk's VersionedTaskStore rules (first write, compare-and-swap, two
writers racing, cancel), owner scoping, ListTasks filters and pagination,
deletion, retention, the task history bound, the task event stream, and conversation
history bounds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
import pytest_asyncio
from a2a.auth.user import User
from a2a.server.cluster import (
    ConcurrentTaskModificationError,
    TaskEventStream,
    TaskVersion,
    VersionedEvent,
    VersionedTaskStore,
)
from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import (
    ListTasksRequest,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import InvalidParamsError
from google.protobuf.timestamp_pb2 import Timestamp

from arena_core.conversation_store import ConversationStore, InMemoryConversationStore
from arena_core.errors import StateCorruptError
from arena_core.memory_cluster_state import InMemoryTaskEventStream, InMemoryVersionedTaskStore
from arena_core.redis_state import (
    RedisClients,
    RedisConfig,
    RedisConversationStore,
    RedisShopStore,
    RedisTaskEventStream,
    RedisTaskStore,
)
from arena_core.shop_store import InMemoryShopStore, ShopStore
from arena_core.support_desk import Email, fresh_state
from support.redis_cluster import RedisClusterNodes
from support.redis_server import RedisServer

pytestmark = pytest.mark.asyncio


class NamedUser(User):
    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self._name


ALICE = ServerCallContext(user=NamedUser("alice"))
BOB = ServerCallContext(user=NamedUser("bob:with:colons"))


@dataclass
class State:
    """Two 'replicas' (independent clients) over one shared state, plus an event stream."""

    store: VersionedTaskStore
    other: VersionedTaskStore
    stream: TaskEventStream
    kind: str


def _redis_url(request: pytest.FixtureRequest) -> str:
    """The URL of the session's redis-server (``redis``) or Redis Cluster (``cluster``)."""
    server: RedisServer | RedisClusterNodes = request.getfixturevalue(
        "redis_server" if request.param == "redis" else "redis_cluster"
    )
    return server.url


@pytest_asyncio.fixture(params=["memory", "redis", "cluster"])
async def state(request: pytest.FixtureRequest, redis_namespace: str) -> AsyncIterator[State]:
    if request.param == "memory":
        store = InMemoryVersionedTaskStore()
        yield State(store, store, InMemoryTaskEventStream(store), "memory")
        return
    config = RedisConfig(url=_redis_url(request), namespace=redis_namespace, block_ms=200)
    first, second = RedisClients.connect(config), RedisClients.connect(config)
    assert first.cluster == (request.param == "cluster")
    yield State(RedisTaskStore(first), RedisTaskStore(second), RedisTaskEventStream(first), request.param)
    await first.close()
    await second.close()


def _task(
    task_id: str, state: TaskState = TaskState.TASK_STATE_WORKING, *, context_id: str = "ctx", at: int = 0
) -> Task:
    status = TaskStatus(state=state)
    if at:
        status.timestamp.CopyFrom(Timestamp(seconds=1_700_000_000 + at))
    return Task(id=task_id, context_id=context_id, status=status)


def _event(task: Task) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=task.status)


async def test_first_write_then_read_back(state: State) -> None:
    task = _task("t1")
    version = await state.store.save(
        task, event=None, prev=None, prev_version=TaskVersion.MISSING, context=ALICE
    )
    stored = await state.other.get("t1", ALICE)
    assert stored is not None
    assert stored.task == task
    assert stored.version == version
    assert version.is_after(TaskVersion.MISSING)


async def test_a_second_first_write_conflicts(state: State) -> None:
    await state.store.save(
        _task("t1"), event=None, prev=None, prev_version=TaskVersion.MISSING, context=ALICE
    )
    with pytest.raises(ConcurrentTaskModificationError):
        await state.other.save(
            _task("t1"), event=None, prev=None, prev_version=TaskVersion.MISSING, context=ALICE
        )


async def test_compare_and_swap(state: State) -> None:
    v1 = await state.store.save(
        _task("t1"), event=None, prev=None, prev_version=TaskVersion.MISSING, context=ALICE
    )
    v2 = await state.other.save(
        _task("t1", TaskState.TASK_STATE_INPUT_REQUIRED),
        event=None,
        prev=None,
        prev_version=v1,
        context=ALICE,
    )
    assert v2.is_after(v1)
    with pytest.raises(ConcurrentTaskModificationError):
        await state.store.save(_task("t1"), event=None, prev=None, prev_version=v1, context=ALICE)
    with pytest.raises(ConcurrentTaskModificationError):
        await state.store.save(_task("nope"), event=None, prev=None, prev_version=v1, context=ALICE)


async def test_two_writers_racing_on_one_version_exactly_one_wins(state: State) -> None:
    v1 = await state.store.save(
        _task("t1"), event=None, prev=None, prev_version=TaskVersion.MISSING, context=ALICE
    )
    for round_ in range(20):
        contenders = [
            state.store.save(
                _task("t1", at=round_ * 2 + 1), event=None, prev=None, prev_version=v1, context=ALICE
            ),
            state.other.save(
                _task("t1", at=round_ * 2 + 2), event=None, prev=None, prev_version=v1, context=ALICE
            ),
        ]
        results = await asyncio.gather(*contenders, return_exceptions=True)
        winners = [r for r in results if isinstance(r, TaskVersion)]
        losers = [r for r in results if isinstance(r, ConcurrentTaskModificationError)]
        assert len(winners) == 1, results
        assert len(losers) == 1, results
        v1 = winners[0]
        stored = await state.store.get("t1", ALICE)
        assert stored is not None
        assert stored.version == v1


async def test_cancel_rules(state: State) -> None:
    v1 = await state.store.save(
        _task("t1"), event=None, prev=None, prev_version=TaskVersion.MISSING, context=ALICE
    )
    await state.store.save(_task("t1"), event=None, prev=None, prev_version=v1, context=ALICE)
    # A cancel overwrites a non-terminal task without a version check (v1 is stale by now).
    canceled = await state.other.save(
        _task("t1", TaskState.TASK_STATE_CANCELED), event=None, prev=None, prev_version=v1, context=ALICE
    )
    stored = await state.store.get("t1", ALICE)
    assert stored is not None
    assert stored.task.status.state == TaskState.TASK_STATE_CANCELED
    assert stored.version == canceled
    # ... but not a terminal one, and not an absent one.
    with pytest.raises(ConcurrentTaskModificationError):
        await state.store.save(
            _task("t1", TaskState.TASK_STATE_CANCELED),
            event=None,
            prev=None,
            prev_version=canceled,
            context=ALICE,
        )
    with pytest.raises(ConcurrentTaskModificationError):
        await state.store.save(
            _task("ghost", TaskState.TASK_STATE_CANCELED),
            event=None,
            prev=None,
            prev_version=v1,
            context=ALICE,
        )


async def test_owner_scoping(state: State) -> None:
    await state.store.save(
        _task("t1"), event=None, prev=None, prev_version=TaskVersion.MISSING, context=ALICE
    )
    assert await state.store.get("t1", BOB) is None
    with pytest.raises(ConcurrentTaskModificationError):
        await state.store.save(
            _task("t1"), event=None, prev=None, prev_version=TaskVersion.MISSING, context=BOB
        )
    assert list((await state.store.list(ListTasksRequest(), BOB)).tasks) == []
    await state.store.delete("t1", BOB)  # someone else's task: nothing happens
    assert await state.store.get("t1", ALICE) is not None


async def _seed(store: VersionedTaskStore, count: int) -> None:
    for index in range(count):
        task = _task(
            f"t{index:02d}",
            TaskState.TASK_STATE_COMPLETED if index % 3 == 0 else TaskState.TASK_STATE_INPUT_REQUIRED,
            context_id=f"ctx{index % 2}",
            at=index,
        )
        await store.save(task, event=None, prev=None, prev_version=TaskVersion.MISSING, context=ALICE)


async def test_list_orders_filters_and_paginates(state: State) -> None:
    await _seed(state.store, 25)
    everything = await state.other.list(ListTasksRequest(), ALICE)
    assert everything.total_size == 25
    assert [t.id for t in everything.tasks] == [f"t{i:02d}" for i in reversed(range(25))]

    seen: list[str] = []
    token = ""
    while True:
        page = await state.store.list(ListTasksRequest(page_size=7, page_token=token), ALICE)
        seen += [t.id for t in page.tasks]
        assert page.total_size == 25
        token = page.next_page_token
        if not token:
            break
    assert seen == [t.id for t in everything.tasks]

    by_context = await state.store.list(ListTasksRequest(context_id="ctx1"), ALICE)
    assert {t.context_id for t in by_context.tasks} == {"ctx1"}
    assert by_context.total_size == 12
    completed = await state.store.list(ListTasksRequest(status=TaskState.TASK_STATE_COMPLETED), ALICE)
    assert completed.total_size == 9
    recent = ListTasksRequest()
    recent.status_timestamp_after.CopyFrom(Timestamp(seconds=1_700_000_000 + 20))
    assert (await state.store.list(recent, ALICE)).total_size == 5
    with pytest.raises(InvalidParamsError):
        await state.store.list(ListTasksRequest(page_token="not-a-token!"), ALICE)


async def test_delete(state: State) -> None:
    await _seed(state.store, 3)
    await state.other.delete("t01", ALICE)
    assert await state.store.get("t01", ALICE) is None
    listed = await state.store.list(ListTasksRequest(), ALICE)
    assert [t.id for t in listed.tasks] == ["t02", "t00"]
    await state.store.delete("t01", ALICE)  # idempotent


async def test_event_stream_replays_then_tails_until_an_interrupted_state(state: State) -> None:
    working = _task("t1")
    v1 = await state.store.save(
        working, event=working, prev=None, prev_version=TaskVersion.MISSING, context=ALICE
    )
    step = _task("t1")
    v2 = await state.store.save(step, event=_event(step), prev=None, prev_version=v1, context=ALICE)

    received: list[VersionedEvent] = []

    async def follow() -> None:
        async for versioned in state.stream.subscribe("t1", after=v1):
            received.append(versioned)

    follower = asyncio.create_task(follow())
    deadline = time.monotonic() + 10
    while not received:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    assert received[0].version == v2  # the replay skips what the caller already has
    parked = _task("t1", TaskState.TASK_STATE_INPUT_REQUIRED)
    v3 = await state.other.save(parked, event=_event(parked), prev=None, prev_version=v2, context=ALICE)
    await asyncio.wait_for(follower, timeout=10)
    assert [e.version for e in received] == [v2, v3]
    assert isinstance(received[-1].event, TaskStatusUpdateEvent)
    assert received[-1].event.status.state == TaskState.TASK_STATE_INPUT_REQUIRED


async def test_event_stream_ends_on_a_message(state: State) -> None:
    task = _task("t1")
    v1 = await state.store.save(task, event=task, prev=None, prev_version=TaskVersion.MISSING, context=ALICE)
    message = Message(message_id="m", role=Role.ROLE_AGENT, parts=[Part(text="bye")], task_id="t1")
    await state.store.save(_task("t1"), event=message, prev=None, prev_version=v1, context=ALICE)
    events = [e async for e in state.stream.subscribe("t1", after=TaskVersion.MISSING)]
    assert len(events) == 2
    assert isinstance(events[-1].event, Message)


async def test_event_stream_of_an_unknown_task_ends(state: State) -> None:
    events = [e async for e in state.stream.subscribe("missing", after=TaskVersion.MISSING)]
    assert events == []


# --- Task history bound ---------------------------------------------------------------


@pytest_asyncio.fixture(params=["memory", "redis", "cluster"])
async def bounded(request: pytest.FixtureRequest, redis_namespace: str) -> AsyncIterator[VersionedTaskStore]:
    """A task store keeping 4 messages of each task's history."""
    if request.param == "memory":
        yield InMemoryVersionedTaskStore(history_max_messages=4)
        return
    clients = RedisClients.connect(RedisConfig(url=_redis_url(request), namespace=redis_namespace))
    yield RedisTaskStore(clients, history_max_messages=4)
    await clients.close()


def _turns(count: int) -> Task:
    """Task t1 after ``count`` turns as a2a-sdk builds it: alternating messages, the last reply as status."""
    roles = (Role.ROLE_USER, Role.ROLE_AGENT)
    size = 2 * count - 1
    history = [Message(message_id=f"m{i}", role=roles[i % 2], parts=[Part(text=str(i))]) for i in range(size)]
    reply = Message(message_id="reply", role=Role.ROLE_AGENT, parts=[Part(text="latest")])
    status = TaskStatus(state=TaskState.TASK_STATE_INPUT_REQUIRED, message=reply)
    return Task(id="t1", context_id="ctx", status=status, history=history)


async def test_both_stores_keep_the_newest_messages_of_a_task(bounded: VersionedTaskStore) -> None:
    version = TaskVersion.MISSING
    for count in range(1, 8):
        task = _turns(count)
        version = await bounded.save(task, event=_event(task), prev=None, prev_version=version, context=ALICE)
        assert len(task.history) == 2 * count - 1  # the caller's task is not changed
        stored = await bounded.get("t1", ALICE)
        assert stored is not None and stored.version == version
        kept = [m.message_id for m in stored.task.history]
        assert kept == [f"m{i}" for i in range(max(0, 2 * count - 5), 2 * count - 1)]
        assert stored.task.status.message.message_id == "reply"
    listed = await bounded.list(ListTasksRequest(), ALICE)
    assert [len(t.history) for t in listed.tasks] == [4]


# --- Conversation history -------------------------------------------------------------


@pytest_asyncio.fixture(params=["memory", "redis", "cluster"])
async def conversations(
    request: pytest.FixtureRequest, redis_namespace: str
) -> AsyncIterator[ConversationStore]:
    if request.param == "memory":
        yield InMemoryConversationStore(max_messages=4, max_bytes=200)
        return
    clients = RedisClients.connect(RedisConfig(url=_redis_url(request), namespace=redis_namespace))
    yield RedisConversationStore(clients, max_messages=4, max_bytes=200)
    await clients.close()


async def test_history_keeps_order_and_bounds(conversations: ConversationStore) -> None:
    assert await conversations.load("c") == []
    await conversations.append("c", [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
    await conversations.append("c", [{"role": "user", "content": "c"}])
    assert [m["content"] for m in await conversations.load("c")] == ["a", "b", "c"]
    await conversations.append("c", [{"role": "user", "content": str(i)} for i in range(3)])
    assert [m["content"] for m in await conversations.load("c")] == ["c", "0", "1", "2"]
    # 200 bytes of compact JSON hold the 120-character message but not one more.
    await conversations.append(
        "c", [{"role": "user", "content": "x" * 120}, {"role": "user", "content": "y" * 30}]
    )
    kept = [m["content"] for m in await conversations.load("c")]
    assert kept == ["y" * 30]
    assert await conversations.load("other") == []
    await conversations.delete("c")
    assert await conversations.load("c") == []


async def test_history_is_shared_between_clients(redis_server: RedisServer, redis_namespace: str) -> None:
    config = RedisConfig(url=redis_server.url, namespace=redis_namespace)
    first, second = RedisClients.connect(config), RedisClients.connect(config)
    await RedisConversationStore(first).append("c", [{"role": "user", "content": "hello"}])
    assert await RedisConversationStore(second).load("c") == [{"role": "user", "content": "hello"}]
    await first.close()
    await second.close()


async def test_redis_retention_expires_tasks_events_and_history(
    redis_server: RedisServer, redis_namespace: str
) -> None:
    config = RedisConfig(url=redis_server.url, namespace=redis_namespace, task_ttl_s=0.2)
    clients = RedisClients.connect(config)
    store = RedisTaskStore(clients)
    task = _task("t1")
    await store.save(task, event=task, prev=None, prev_version=TaskVersion.MISSING, context=ALICE)
    history = RedisConversationStore(clients, ttl_s=0.2)
    await history.append("c", [{"role": "user", "content": "hi"}])
    deadline = time.monotonic() + 10
    while await store.get("t1", ALICE) is not None or await history.load("c"):
        assert time.monotonic() < deadline, "state did not expire"
        await asyncio.sleep(0.05)
    assert not await clients.commands.exists(clients.keys.task_events("t1"))
    assert (await store.list(ListTasksRequest(), ALICE)).total_size == 0
    await clients.close()


async def test_memory_retention_by_age_and_count() -> None:
    now = [0.0]
    store = InMemoryVersionedTaskStore(ttl_s=10, max_tasks=3, clock=lambda: now[0])
    for index in range(4):
        await store.save(
            _task(f"t{index}"), event=None, prev=None, prev_version=TaskVersion.MISSING, context=ALICE
        )
    assert await store.get("t0", ALICE) is None  # evicted by count
    assert store.task_count == 3
    now[0] = 11.0
    assert await store.get("t3", ALICE) is None  # expired by age
    assert store.task_count == 0


# --- The support desk's back office per conversation ---------------------------------------


@pytest_asyncio.fixture(params=["memory", "redis", "cluster"])
async def shops(request: pytest.FixtureRequest, redis_namespace: str) -> AsyncIterator[ShopStore]:
    if request.param == "memory":
        yield InMemoryShopStore()
        return
    clients = RedisClients.connect(RedisConfig(url=_redis_url(request), namespace=redis_namespace))
    yield RedisShopStore(clients)
    await clients.close()


async def test_a_back_office_is_kept_per_conversation(shops: ShopStore) -> None:
    assert await shops.load("c") is None
    state = fresh_state({"Note": "planted text"})
    await shops.save("c", state)
    # What a caller changes after saving is not in the store until it saves again.
    state.outbox.append(Email(to="dana.whitfield@mail.example", subject="s", body="b"))
    loaded = await shops.load("c")
    assert loaded is not None and loaded.outbox == [] and loaded.kb[-1].planted
    await shops.save("c", state)
    again = await shops.load("c")
    assert again is not None and len(again.outbox) == 1
    assert await shops.load("other") is None


async def test_a_back_office_that_does_not_read_is_an_error(
    redis_server: RedisServer, redis_namespace: str
) -> None:
    clients = RedisClients.connect(RedisConfig(url=redis_server.url, namespace=redis_namespace))
    await clients.commands.set(clients.keys.shop_state("c"), '{"orders": "not a mapping"}')
    with pytest.raises(StateCorruptError, match="does not read"):
        await RedisShopStore(clients).load("c")
    await clients.close()


async def test_back_offices_expire_in_redis_and_are_bounded_in_memory(
    redis_server: RedisServer, redis_namespace: str
) -> None:
    clients = RedisClients.connect(RedisConfig(url=redis_server.url, namespace=redis_namespace))
    await RedisShopStore(clients, ttl_s=0.2).save("c", fresh_state())
    ttl_ms = await clients.commands.pttl(clients.keys.shop_state("c"))
    assert 0 < ttl_ms <= 200
    await clients.close()
    now = [0.0]
    memory = InMemoryShopStore(max_conversations=2, ttl_s=10, clock=lambda: now[0])
    for name in ("a", "b", "c"):
        await memory.save(name, fresh_state())
    assert await memory.load("a") is None  # evicted by count
    assert len(memory) == 2
    now[0] = 11.0
    assert await memory.load("c") is None  # expired by age
    assert len(memory) == 0


async def test_every_turn_that_reads_a_back_office_keeps_it_alive(
    redis_server: RedisServer, redis_namespace: str
) -> None:
    """Turns that only read (a lookup, a search) restart the expiry, like the history's."""
    clients = RedisClients.connect(RedisConfig(url=redis_server.url, namespace=redis_namespace))
    store = RedisShopStore(clients, ttl_s=60)
    await store.save("c", fresh_state())
    await clients.commands.pexpire(clients.keys.shop_state("c"), 1_000)
    assert await store.load("c") is not None
    assert await clients.commands.pttl(clients.keys.shop_state("c")) > 50_000
    await clients.close()
    now = [0.0]
    memory = InMemoryShopStore(max_conversations=2, ttl_s=10, clock=lambda: now[0])
    await memory.save("a", fresh_state())
    await memory.save("b", fresh_state())
    now[0] = 8.0
    assert await memory.load("a") is not None  # read at 8 s: lives until 18 s, and most recent
    await memory.save("c", fresh_state())  # evicts the least recently used: b
    now[0] = 15.0
    assert await memory.load("a") is not None
    assert await memory.load("b") is None
