"""Every group of keys one script or transaction touches hashes to one Redis Cluster slot.

A script whose keys span slots fails on a cluster ("all keys must map to the same key slot"),
so the hash tags in :mod:`arena_core.redis_state.keys` are what makes the arena run there.
"""

from __future__ import annotations

import pytest
from redis.crc import key_slot

from arena_core.redis_state.keys import CAMPAIGN_PARTS, RedisKeys

AWKWARD = ["", "t1", "a:b", "{x}", "}{", "%", "%7B", "ü", "a" * 300]


def _slots(*keys: str) -> set[int]:
    return {key_slot(key.encode()) for key in keys}


@pytest.mark.parametrize("namespace", ["", "ns", "n{s}"])
@pytest.mark.parametrize("part", AWKWARD)
def test_each_group_shares_a_slot(namespace: str, part: str) -> None:
    keys = RedisKeys(namespace)
    assert len(_slots(keys.task(part), keys.task_events(part))) == 1
    owner = [keys.owner_tasks(part), keys.owner_expiry(part), keys.owner_context_tasks(part, "ctx:{1}")]
    assert len(_slots(*owner)) == 1
    assert len(_slots(keys.conversation(part), keys.conversation_bytes(part), keys.shop_state(part))) == 1
    campaign = [keys.campaign(part), keys.campaign_slots(part, "alpha{1}")]
    campaign += [keys.campaign_part(part, name) for name in CAMPAIGN_PARTS]
    assert len(_slots(*campaign)) == 1
    shared = [keys.match_queue, keys.campaigns, keys.unfinished_campaigns, keys.active_campaigns]
    assert len(_slots(*shared)) == 1


def test_tasks_conversations_and_campaigns_spread_over_slots() -> None:
    keys = RedisKeys()
    for build in (keys.task, keys.conversation, keys.campaign, keys.owner_tasks):
        assert len(_slots(*(build(f"id-{n}") for n in range(200)))) > 150


def test_an_empty_part_does_not_share_keys_with_any_other() -> None:
    keys = RedisKeys()
    anonymous = keys.owner_tasks("")
    assert anonymous == "arena:owner:{%}:tasks"
    assert all(keys.owner_tasks(other) != anonymous for other in AWKWARD[1:])
    assert len({keys.task(part) for part in AWKWARD}) == len(AWKWARD)


def test_braces_in_a_part_cannot_move_the_tag() -> None:
    keys = RedisKeys()
    assert keys.conversation("a}b") == "arena:conv:{a%7Db}"
    assert _slots(keys.conversation("x}{y")) == _slots("{x%7D%7By}")
