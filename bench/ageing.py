"""Benchmark 3: does a defender get slower as it keeps more conversations?

Three Redis servers are filled with 1k, 10k and 100k stored conversations, each served by
its own defender (model at 0 ms, so that the arena's own cost is all there is to see).
The conversations are written by the defender's own stores (``RedisTaskStore.save`` and
``RedisConversationStore.append``, the same Lua scripts as a turn runs), each a parked
input-required task with its event, its index entries and a two-message history, in the
owner and with the TTLs a defender uses. A fourth set-up, a second 1k store, is the control:
the difference between two identical set-ups is the noise floor. Then the defenders are
measured in small alternating batches, round after round: the cost of a new conversation
(turn 1) and of a follow-up turn (turn 2), as medians.
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
BATCHES = 20


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


def _label(count: int) -> str:
    return f"{count // 1000}k" if count >= 1000 and count % 1000 == 0 else str(count)


def run(options: BenchOptions) -> Outcome:
    levels = [1_000, 10_000, 100_000] if not options.quick else [100, 1_000, 5_000]
    conversations = options.scale(600, 40)
    # A control: a second store of the smallest size. The difference between two identical
    # set-ups is the noise floor (placement of processes and memory, the machine's own drift).
    setups = {_label(level): level for level in levels}
    control = f"{_label(levels[0])}-control"
    setups[control] = levels[0]
    with stack(redis=False) as bench:
        model = bench.start_scripted_model("model", 0)
        defenders = {}
        servers = {}
        for name, level in setups.items():
            server = servers[name] = bench.start_extra_redis(f"redis-{name}")
            asyncio.run(seed(server.url, level))
            defenders[name] = bench.start_defender(f"defender-{name}", model, ARENA_REDIS_URL=server.url)
        for defender in defenders.values():
            a2a_load(defender.url, requests=100, turns=2)
        new: dict[str, list[float]] = {name: [] for name in setups}
        turn: dict[str, list[float]] = {name: [] for name in setups}
        rounds = []
        batch = max(1, conversations // BATCHES)
        names = list(setups)
        for round_index in range(options.rounds):
            this_round: dict[str, dict[str, list[float]]] = {name: {"new": [], "turn": []} for name in names}
            # Small batches, alternating between the set-ups (in a changing order), so that
            # whatever else the machine does hits every one alike.
            for batch_index in range(BATCHES):
                order = names if (round_index + batch_index) % 2 == 0 else list(reversed(names))
                for name in order:
                    load = a2a_load(defenders[name].url, requests=2 * batch, turns=2)
                    this_round[name]["new"] += load.by_turn(1)
                    this_round[name]["turn"] += load.by_turn(2)
            for name in names:
                new[name] += this_round[name]["new"]
                turn[name] += this_round[name]["turn"]
            rounds.append(
                {
                    name: {
                        "new_conversation_p50_ms": percentile(values["new"], 50),
                        "turn_p50_ms": percentile(values["turn"], 50),
                    }
                    for name, values in this_round.items()
                }
            )
        keys = {name: int(redis.Redis.from_url(servers[name].url).dbsize()) for name in names}

    new_p50 = {name: percentile(values, 50) for name, values in new.items()}
    turn_p50 = {name: percentile(values, 50) for name, values in turn.items()}
    measured_levels = [_label(level) for level in levels]
    growth_new = max(new_p50[n] for n in measured_levels) / min(new_p50[n] for n in measured_levels) - 1
    growth_turn = max(turn_p50[n] for n in measured_levels) / min(turn_p50[n] for n in measured_levels) - 1
    first = measured_levels[0]
    noise_new = abs(new_p50[control] / new_p50[first] - 1)
    noise_turn = abs(turn_p50[control] / turn_p50[first] - 1)
    trend_new = new_p50[measured_levels[-1]] / new_p50[first] - 1
    trend_turn = turn_p50[measured_levels[-1]] / turn_p50[first] - 1
    met = growth_new <= GOAL and growth_turn <= GOAL
    explanation = (
        f"{_label(levels[-1])} against {first}: new conversation {trend_new * 100:+.0f}%, turn "
        f"{trend_turn * 100:+.0f}%; two identical {first} set-ups differ by {noise_new * 100:.0f}% and "
        f"{noise_turn * 100:.0f}% (the noise floor)"
    )
    return Outcome(
        id="ageing",
        title="Ageing: stored conversations",
        goal=f"new conversation and turn flat within {GOAL * 100:.0f}% at 1k/10k/100k conversations",
        measured=(
            f"new conversation {' / '.join(f'{new_p50[n]:.2f}' for n in measured_levels)} ms, "
            f"turn {' / '.join(f'{turn_p50[n]:.2f}' for n in measured_levels)} ms at "
            f"{'/'.join(measured_levels)} (spread {growth_new * 100:.0f}% and {growth_turn * 100:.0f}%)"
        ),
        met=met,
        explanation=explanation,
        details={
            "levels": levels,
            "conversations_per_round": conversations,
            "new_conversation_ms": {name: summary_ms(values) for name, values in new.items()},
            "turn_ms": {name: summary_ms(values) for name, values in turn.items()},
            "noise_floor": {"new_conversation": noise_new, "turn": noise_turn},
            "redis_keys": keys,
            "rounds": rounds,
        },
    )
