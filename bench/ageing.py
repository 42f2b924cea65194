"""Benchmark 3: does a defender get slower as it keeps more conversations?

Three Redis servers are filled with 1k, 10k and 100k stored conversations, each served by
its own defender (model at 0 ms, so that the arena's own cost is all there is to see).
The conversations are written by the defender's own stores (``RedisTaskStore.save`` and
``RedisConversationStore.append``, the same Lua scripts as a turn runs), each a parked
input-required task with its event, its index entries and a two-message history, in the
owner and with the TTLs a defender uses. Then the three defenders are measured in turn,
round after round: the cost of a new conversation (turn 1) and of a follow-up turn (turn 2).
"""

from __future__ import annotations

import asyncio
import uuid

import redis
from a2a.server.cluster import TaskVersion
from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import Message, Part, Role, Task, TaskState, TaskStatus

from arena_core.redis_state import RedisClients, RedisConfig, RedisConversationStore, RedisTaskStore
from bench.harness import a2a_load, percentile, stack, summary_ms
from bench.scenario import BenchOptions, Outcome

GOAL = 0.10
SEED_CONCURRENCY = 64
BATCHES = 10


def _task(index: int) -> Task:
    task_id, context_id = str(uuid.uuid4()), str(uuid.uuid4())
    user = Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_USER,
        parts=[Part(text=f"Stored conversation {index}: tell me about the weather, please.")],
        context_id=context_id,
        task_id=task_id,
    )
    reply = Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_AGENT,
        parts=[Part(text="I can't help with that.")],
        context_id=context_id,
        task_id=task_id,
    )
    task = Task(id=task_id, context_id=context_id, history=[user])
    task.status.CopyFrom(TaskStatus(state=TaskState.TASK_STATE_INPUT_REQUIRED, message=reply))
    task.status.timestamp.GetCurrentTime()
    return task


async def seed(redis_url: str, count: int) -> None:
    """Store ``count`` conversations as a defender would (see the module doc)."""
    clients = RedisClients.connect(RedisConfig(url=redis_url))
    tasks = RedisTaskStore(clients)
    conversations = RedisConversationStore(clients)
    context = ServerCallContext()
    next_index = iter(range(count))

    async def writer() -> None:
        for index in next_index:
            task = _task(index)
            await tasks.save(task, event=task, prev=None, prev_version=TaskVersion.MISSING, context=context)
            await conversations.append(
                task.context_id,
                [
                    {"role": "user", "content": task.history[0].parts[0].text},
                    {"role": "assistant", "content": task.status.message.parts[0].text},
                ],
            )

    try:
        await asyncio.gather(*(writer() for _ in range(SEED_CONCURRENCY)))
    finally:
        await clients.close()


def run(options: BenchOptions) -> Outcome:
    levels = [1_000, 10_000, 100_000] if not options.quick else [100, 1_000, 5_000]
    conversations = options.scale(300, 40)
    with stack(redis=False) as bench:
        model = bench.start_scripted_model("model", 0)
        defenders = {}
        servers = {}
        for level in levels:
            server = servers[level] = bench.start_extra_redis(f"redis-{level}")
            asyncio.run(seed(server.url, level))
            defenders[level] = bench.start_defender(f"defender-{level}", model, ARENA_REDIS_URL=server.url)
        for defender in defenders.values():
            a2a_load(defender.url, requests=100, turns=2)
        new: dict[int, list[float]] = {level: [] for level in levels}
        turn: dict[int, list[float]] = {level: [] for level in levels}
        rounds = []
        batch = conversations // BATCHES
        for round_index in range(options.rounds):
            this_round: dict[int, dict[str, list[float]]] = {
                level: {"new": [], "turn": []} for level in levels
            }
            # Small batches, alternating between the levels (in a changing order), so that
            # whatever else the machine does hits every level alike.
            for batch_index in range(BATCHES):
                order = levels if (round_index + batch_index) % 2 == 0 else list(reversed(levels))
                for level in order:
                    load = a2a_load(defenders[level].url, requests=2 * batch, turns=2)
                    this_round[level]["new"] += load.by_turn(1)
                    this_round[level]["turn"] += load.by_turn(2)
            for level in levels:
                new[level] += this_round[level]["new"]
                turn[level] += this_round[level]["turn"]
            rounds.append(
                {
                    level: {
                        "new_conversation_p50_ms": percentile(values["new"], 50),
                        "turn_p50_ms": percentile(values["turn"], 50),
                    }
                    for level, values in this_round.items()
                }
            )
        keys = {level: int(redis.Redis.from_url(servers[level].url).dbsize()) for level in levels}

    new_p50 = {level: percentile(values, 50) for level, values in new.items()}
    turn_p50 = {level: percentile(values, 50) for level, values in turn.items()}
    growth_new = max(new_p50.values()) / min(new_p50.values()) - 1
    growth_turn = max(turn_p50.values()) / min(turn_p50.values()) - 1
    met = growth_new <= GOAL and growth_turn <= GOAL
    label = "/".join(f"{level // 1000}k" if level >= 1000 else str(level) for level in levels)
    return Outcome(
        id="ageing",
        title="Ageing: stored conversations",
        goal=f"new conversation and turn flat within {GOAL * 100:.0f}% at 1k/10k/100k conversations",
        measured=(
            f"new conversation {' / '.join(f'{new_p50[level]:.1f}' for level in levels)} ms, "
            f"turn {' / '.join(f'{turn_p50[level]:.1f}' for level in levels)} ms at {label} "
            f"(spread {growth_new * 100:.0f}% and {growth_turn * 100:.0f}%)"
        ),
        met=met,
        explanation=""
        if met
        else "the spread exceeds the goal; see details.rounds for the per-round medians",
        details={
            "levels": levels,
            "conversations_per_batch": conversations,
            "new_conversation_ms": {level: summary_ms(values) for level, values in new.items()},
            "turn_ms": {level: summary_ms(values) for level, values in turn.items()},
            "redis_keys": keys,
            "rounds": rounds,
        },
    )
