"""Lua scripts run atomically by Redis.

Redis runs a script to completion before serving any other command, so the
version check and every write below happen as one step: no other client can
observe or interleave with a half-done save. That is what makes the version
compare-and-swap sound across replicas without locks.

A script may only touch keys of one slot on a Redis Cluster: a task's save there is
two scripts, the task's own write (the compare-and-swap, atomic as ever) and then its
owner's index entries (ADR 0022).
"""

from __future__ import annotations

# The task's own write. KEYS: 1 task hash, 2 events stream (one slot: the task's hash tag)
# ARGV: 1 owner, 2 prev version (0 = first write), 3 is_cancel ("1"/"0"), 4 task bytes,
#       5 event bytes ("" = none), 6 context id, 7 state, 8 index score, 9 task id,
#       10 ttl ms, 11 stream maxlen, 12 terminal states (comma separated)
_WRITE_TASK = """
local current = redis.call('HMGET', KEYS[1], 'v', 'o', 's')
local version, owner, state = current[1], current[2], current[3]
if version and owner ~= ARGV[1] then
  return redis.error_reply('CONFLICT task belongs to another owner')
end
local new_version
if ARGV[3] == '1' then
  if not version then
    return redis.error_reply('CONFLICT task is absent')
  end
  for terminal in string.gmatch(ARGV[12], '[^,]+') do
    if state == terminal then
      return redis.error_reply('CONFLICT task is already terminal')
    end
  end
  new_version = tonumber(version) + 1
elseif ARGV[2] == '0' then
  if version then
    return redis.error_reply('CONFLICT task already exists')
  end
  new_version = 1
else
  if not version or version ~= ARGV[2] then
    return redis.error_reply('CONFLICT stale version')
  end
  new_version = tonumber(version) + 1
end
local task_ttl = tonumber(ARGV[10])
redis.call('HSET', KEYS[1], 'o', ARGV[1], 'v', new_version, 'd', ARGV[4], 'c', ARGV[6], 's', ARGV[7])
redis.call('PEXPIRE', KEYS[1], task_ttl)
if ARGV[5] ~= '' then
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[11], '*', 'v', new_version, 'e', ARGV[5])
  redis.call('PEXPIRE', KEYS[2], task_ttl)
end
"""

# The owner's indexes (one slot: the owner's hash tag). Expects the locals ``ik`` (the
# offset of the owner index, context index and expiry index in KEYS), ``score``, ``task_id``,
# ``ttl`` (ms) and ``ctx`` (the contextId, "" for none).
_INDEX_TASK = """
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('ZADD', KEYS[ik + 1], score, task_id)
redis.call('PEXPIRE', KEYS[ik + 1], ttl)
if ctx ~= '' then
  redis.call('ZADD', KEYS[ik + 2], score, task_id)
  redis.call('PEXPIRE', KEYS[ik + 2], ttl)
end
redis.call('ZADD', KEYS[ik + 3], now_ms + ttl, task_id)
redis.call('PEXPIRE', KEYS[ik + 3], ttl)
-- Bounded pruning: at most 64 expired ids leave the owner index per write.
local expired = redis.call('ZRANGEBYSCORE', KEYS[ik + 3], '-inf', now_ms, 'LIMIT', 0, 64)
for _, id in ipairs(expired) do
  redis.call('ZREM', KEYS[ik + 1], id)
  redis.call('ZREM', KEYS[ik + 3], id)
end
"""

SAVE_TASK = (
    _WRITE_TASK
    + "local ik, score, task_id, ttl, ctx = 2, ARGV[8], ARGV[9], tonumber(ARGV[10]), ARGV[6]\n"
    + _INDEX_TASK
    + "return new_version\n"
)
"""A whole save in one script, on a single Redis: the task's write (version compare-and-swap,
hash, event) and its index entries. KEYS: 1 task hash, 2 events stream, 3 owner index, 4 context
index, 5 owner expiry index; ARGV as ``_WRITE_TASK``. Returns the new version."""

SAVE_TASK_ONLY = _WRITE_TASK + "return new_version\n"
"""The task's own write, on a Redis Cluster (its keys share the task's slot); the indexes follow
with :data:`INDEX_TASK`. KEYS: 1 task hash, 2 events stream; ARGV as ``_WRITE_TASK``."""

INDEX_TASK = (
    "local ik, score, task_id, ttl, ctx = 0, ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]\n"
    + _INDEX_TASK
    + "return 1\n"
)
"""A saved task's index entries, on a Redis Cluster (one owner's keys share a slot). KEYS: 1 owner
index, 2 context index, 3 owner expiry index; ARGV: 1 score, 2 task id, 3 ttl ms, 4 context id."""

# KEYS: 1 history list, 2 byte counter
# ARGV: 1 max messages, 2 max bytes, 3 ttl ms, 4.. messages (JSON)
APPEND_HISTORY = """
local max_messages = tonumber(ARGV[1])
local max_bytes = tonumber(ARGV[2])
for i = 4, #ARGV do
  redis.call('RPUSH', KEYS[1], ARGV[i])
  redis.call('INCRBY', KEYS[2], string.len(ARGV[i]))
end
local size = tonumber(redis.call('GET', KEYS[2]) or '0')
local length = redis.call('LLEN', KEYS[1])
while length > 0 and (length > max_messages or size > max_bytes) do
  local dropped = redis.call('LPOP', KEYS[1])
  size = redis.call('DECRBY', KEYS[2], string.len(dropped))
  length = length - 1
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return length
"""

__all__ = ["APPEND_HISTORY", "INDEX_TASK", "SAVE_TASK", "SAVE_TASK_ONLY"]
