"""Benchmark 4: turn 200 of one conversation against its first turns.

One conversation (one task, continued turn after turn) runs 200 turns against a defender
with the Redis store and tracing; the scripted model answers at 0 ms, and the model's
prompt stays the same size after the first turns because the defender keeps a bounded
history (``ARENA_HISTORY_MAX_MESSAGES``), so what grows, if anything, is the arena's own
work. The latency of turns 191-200 is compared with that of turns 1-10 (medians over all
conversations of the run). Requests ask for ``historyLength: 2``; the size of each response
shows whether it is honoured (bounded) or grows with the conversation. One more
conversation without ``historyLength`` shows the server's default.
"""

from __future__ import annotations

from bench.harness import a2a_load, percentile, stack, summary_ms
from bench.scenario import BenchOptions, Outcome

TURNS = 200
GOAL = 1.5
WINDOW = 10
HISTORY_LENGTH = 2


def run(options: BenchOptions) -> Outcome:
    turns = options.scale(TURNS, 60)
    conversations = max(options.rounds, 3) if not options.quick else 2
    with stack() as bench:
        model = bench.start_scripted_model("model", 0)
        defender = bench.start_defender("defender", model)
        a2a_load(defender.url, requests=100, turns=5)  # warm-up
        early: list[float] = []
        late: list[float] = []
        sizes: dict[int, list[int]] = {}
        for _ in range(conversations):
            load = a2a_load(defender.url, requests=turns, turns=turns, history_length=HISTORY_LENGTH)
            for turn, latency, size, _done in load.samples:
                if turn <= WINDOW:
                    early.append(latency)
                elif turn > turns - WINDOW:
                    late.append(latency)
                sizes.setdefault(turn, []).append(size)
        unbounded = a2a_load(defender.url, requests=turns, turns=turns)
        default_sizes = {turn: size for turn, _latency, size, _done in unbounded.samples}

    ratio = percentile(late, 50) / percentile(early, 50)
    first_size, last_size = max(sizes[1]), max(sizes[turns])
    bounded = last_size <= first_size * 1.5
    met = ratio <= GOAL and bounded
    misses = []
    if ratio > GOAL:
        misses.append(
            f"turn {turns} costs {ratio:.2f}x turn 1, missing {GOAL}x by {(ratio / GOAL - 1) * 100:.0f}%"
        )
    if not bounded:
        misses.append(f"responses grow from {first_size} to {last_size} bytes despite historyLength")
    return Outcome(
        id="long_conversation",
        title=f"Long conversation: turn {turns} vs turn 1",
        goal=f"<= {GOAL}x; responses honour historyLength and stay bounded",
        measured=(
            f"{ratio:.2f}x ({percentile(late, 50):.1f} vs {percentile(early, 50):.1f} ms); response "
            f"{first_size} -> {last_size} bytes with historyLength {HISTORY_LENGTH} "
            f"({default_sizes[1]} -> {default_sizes[turns]} without)"
        ),
        met=met,
        explanation="; ".join(misses),
        details={
            "turns": turns,
            "conversations": conversations,
            "early_ms": summary_ms(early),
            "late_ms": summary_ms(late),
            "response_bytes_by_turn": {turn: max(values) for turn, values in sorted(sizes.items())},
            "response_bytes_without_history_length": default_sizes,
        },
    )
