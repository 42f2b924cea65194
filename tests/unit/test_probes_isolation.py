"""The heuristics of ``isolation.guessable-ids``: counters and short ids are caught, random ids pass."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Callable

import pytest

from arena_core.probes.checks._guessable_ids import (
    MIN_ID_BITS,
    apparent_bits,
    guessable_reason,
    varying_parts,
)


def test_sequential_numbers_are_guessable() -> None:
    assert guessable_reason(["1", "2", "3"]) == "are sequential numbers (1, 2, 3)"
    # Not consecutive (other clients' tasks in between) and unordered: still a counter.
    reason = guessable_reason(["1041", "1007", "1090", "1093"])
    assert reason is not None and reason.startswith("are sequential numbers")


def test_a_shared_prefix_and_a_short_counter_are_guessable() -> None:
    reason = guessable_reason(["ctx-1", "ctx-2", "ctx-3"])
    assert reason is not None and "share all but 1 character" in reason
    reason = guessable_reason(["task-0009", "task-0010", "task-0011"])
    assert reason is not None and "share all but 2 character" in reason
    # A counter inside: the varying part between a shared prefix and a shared suffix.
    assert guessable_reason(["job-17-eu", "job-18-eu", "job-19-eu"]) is not None


def test_uuid1_made_in_a_row_share_all_but_their_time() -> None:
    ids = [str(uuid.uuid1()) for _ in range(3)]
    assert guessable_reason(ids) is not None


def test_low_entropy_random_ids_are_guessable() -> None:
    short = ["a7k2q", "x9q1m", "m3z8c"]  # 5 base-36 characters: about 26 bits
    reason = guessable_reason(short)
    assert reason is not None and "bits of apparent entropy" in reason
    assert apparent_bits(short) < MIN_ID_BITS
    eight_hex = [secrets.token_hex(4) for _ in range(3)]  # 32 bits
    assert guessable_reason(eight_hex) is not None


@pytest.mark.parametrize(
    "make", [lambda: str(uuid.uuid4()), lambda: uuid.uuid4().hex, lambda: secrets.token_hex(16)]
)
def test_random_ids_pass(make: Callable[[], str]) -> None:
    for _ in range(20):  # random ids: no false positive however they fall
        ids = [make() for _ in range(5)]
        assert guessable_reason(ids) is None, ids
        assert apparent_bits(ids) > 100


def test_random_ids_after_a_fixed_prefix_pass() -> None:
    ids = [f"task-{uuid.uuid4().hex}" for _ in range(3)]
    assert guessable_reason(ids) is None
    assert 100 < apparent_bits(ids) <= 128


def test_urlsafe_tokens_of_96_bits_pass_and_of_48_bits_do_not() -> None:
    assert guessable_reason([secrets.token_urlsafe(12) for _ in range(3)]) is None
    assert guessable_reason([secrets.token_urlsafe(6) for _ in range(3)]) is not None


def test_large_random_numbers_are_not_called_sequential() -> None:
    numbers = [str(secrets.randbelow(10**25) + 10**24) for _ in range(3)]
    reason = guessable_reason(numbers)
    assert reason is None or not reason.startswith("are sequential")


def test_fewer_than_three_distinct_ids_say_nothing() -> None:
    assert guessable_reason(["1", "2"]) is None
    assert guessable_reason(["1", "1", "2"]) is None
    assert guessable_reason([]) is None


def test_varying_parts_split_prefix_middle_and_suffix() -> None:
    assert varying_parts(["job-17-eu", "job-18-eu", "job-9-eu"]) == ("job-", ["17", "18", "9"], "-eu")
    assert varying_parts(["abc", "abd"]) == ("ab", ["c", "d"], "")
    assert varying_parts(["same", "same"]) == ("same", ["", ""], "")
