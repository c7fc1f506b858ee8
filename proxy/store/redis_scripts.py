"""The Redis session store's key layout and its fenced Lua scripts.

Keys, all under one Cluster hash tag so a session lives in one slot and every Lua
script may touch all of them:

* ``dxp:{<session_id>}:rec`` - hash of the SessionRecord fields, each value JSON
  (orjson), plus ``floor`` (highest seq dropped from the log) and ``bytes`` (log size).
* ``dxp:{<session_id>}:log`` - stream of server events, entry id ``<seq>-0``, fields
  ``e`` (event text) and ``t`` (Redis server time in ms, for the age bound).

Every write script starts with ``FENCE``: it checks the lease epoch, so a replica
that lost a session can never overwrite the new owner's state, and refreshes the TTL
(``disconnect_grace_s``) of both keys. Times come from Redis ``TIME`` so replicas
with skewed clocks agree on the age of an event.
"""

from __future__ import annotations

from shim.journal import ENTRY_BYTES

KEY_PREFIX = "dxp"
# Script results: >= 0 success (take_over returns the new epoch), else these.
LOST, GONE = -1, -2

# KEYS[1] = rec, KEYS[2] = log; ARGV[1] = ttl ms, ARGV[2] = the caller's epoch.
FENCE = """
local function fence()
  local cur = redis.call('HGET', KEYS[1], 'epoch')
  if not cur then return -2 end
  if tonumber(cur) ~= tonumber(ARGV[2]) then return -1 end
  return 0
end
local function touch()
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  redis.call('PEXPIRE', KEYS[2], ARGV[1])
end
"""

# ARGV[3] = token hash (JSON), ARGV[4..] = field/value pairs. A retried create with
# the same token is a no-op; another token under the same id is a collision.
CREATE = """
local cur = redis.call('HGET', KEYS[1], 'token_hash')
if cur then
  if cur == ARGV[3] then return 0 end
  return -1
end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[1], unpack(ARGV, 4))
touch()
return 0
"""

# ARGV[3] = new owner (JSON). Compare-and-increment: one of N racing resumes wins.
TAKE_OVER = """
local f = fence()
if f ~= 0 then return f end
local epoch = redis.call('HINCRBY', KEYS[1], 'epoch', 1)
redis.call('HSET', KEYS[1], 'owner', ARGV[3])
touch()
return epoch
"""

# Not fenced by the epoch but by the token hash. ARGV[2] = new owner, ARGV[3] = the
# hash the resume matched, ARGV[4] = the rotated token's (all JSON). The hash moves
# from the one to the other with the lease (the epoch bumped, which fences the
# replaced connection's writes out), and the pending rebinds' marks are cleared; one
# already moved (this write, answered late) is left as it is. Any other hash:
# another resume rotated it.
REBIND = """
local cur = redis.call('HGET', KEYS[1], 'token_hash')
if not cur then return -2 end
if cur == ARGV[4] then
  touch()
  return tonumber(redis.call('HGET', KEYS[1], 'epoch'))
end
if cur ~= ARGV[3] then return -1 end
local epoch = redis.call('HINCRBY', KEYS[1], 'epoch', 1)
redis.call('HSET', KEYS[1], 'owner', ARGV[2], 'token_hash', ARGV[4], 'rebind_until_ms', '0')
redis.call('HSET', KEYS[1], 'rebind_marks', '{}')
touch()
return epoch
"""

# ARGV[3] = a pending rebind's mark id, ARGV[4] = until when it holds (ms; 0 takes it
# away), ARGV[5] = now (ms, the caller's clock, which wrote the marks). The other
# marks stay (those past now go); ``rebind_until_ms`` becomes the latest, returned.
# Written as integers (cjson would round a number to 14 digits).
MARK = """
local f = fence()
if f ~= 0 then return f end
local raw = redis.call('HGET', KEYS[1], 'rebind_marks')
local marks = {}
if raw then marks = cjson.decode(raw) end
local now = tonumber(ARGV[5])
marks[ARGV[3]] = tonumber(ARGV[4])
local kept, latest = {}, 0
for id, at in pairs(marks) do
  if at > now then
    table.insert(kept, cjson.encode(id) .. ':' .. string.format('%d', at))
    if at > latest then latest = at end
  end
end
local text = '{' .. table.concat(kept, ',') .. '}'
redis.call('HSET', KEYS[1], 'rebind_marks', text, 'rebind_until_ms', string.format('%d', latest))
touch()
return latest
"""

# ARGV[3] = acked_seq, ARGV[4] = last_seq, ARGV[5..] = other field/value pairs.
# Sequence numbers only move forward, whatever a stale snapshot says.
SAVE = """
local f = fence()
if f ~= 0 then return f end
local h = redis.call('HMGET', KEYS[1], 'acked_seq', 'last_seq')
local acked = math.max(tonumber(h[1]), tonumber(ARGV[3]))
local last = math.max(tonumber(h[2]), tonumber(ARGV[4]))
redis.call('HSET', KEYS[1], 'acked_seq', acked, 'last_seq', last, unpack(ARGV, 5))
touch()
return 0
"""

# ARGV[3] = acked_seq, ARGV[4] = max bytes, ARGV[5] = max age ms, ARGV[6..] = seq/text.
# Events at or below last_seq are skipped (idempotent retries). Then the oldest
# entries go while acked, over the byte budget or too old; ``floor`` remembers the
# highest seq dropped so events_after can report the gap. Each entry counts its
# bytes plus ``ENTRY_BYTES``, as the session's own log does (``shim/journal.py``).
APPEND = """
local f = fence()
if f ~= 0 then return f end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local h = redis.call('HMGET', KEYS[1], 'last_seq', 'acked_seq', 'bytes', 'floor')
local last, acked = tonumber(h[1]), math.max(tonumber(h[2]), tonumber(ARGV[3]))
local bytes, floor = tonumber(h[3]), tonumber(h[4])
for i = 6, #ARGV, 2 do
  local seq = tonumber(ARGV[i])
  if seq > last then
    redis.call('XADD', KEYS[2], string.format('%d-0', seq), 'e', ARGV[i + 1], 't', now)
    bytes = bytes + #ARGV[i + 1] + ENTRY_BYTES
    last = seq
  end
end
local max_bytes, cutoff = tonumber(ARGV[4]), now - tonumber(ARGV[5])
local done = false
while not done do
  local batch = redis.call('XRANGE', KEYS[2], '-', '+', 'COUNT', 64)
  if #batch == 0 then break end
  for _, entry in ipairs(batch) do
    local seq = tonumber(string.match(entry[1], '^%d+'))
    local kv, text, at = entry[2], '', 0
    for j = 1, #kv, 2 do
      if kv[j] == 'e' then text = kv[j + 1] elseif kv[j] == 't' then at = tonumber(kv[j + 1]) end
    end
    if seq <= acked or bytes > max_bytes or at < cutoff then
      bytes = bytes - #text - ENTRY_BYTES
      if seq > floor then floor = seq end
    else
      done = true
      break
    end
  end
  redis.call('XTRIM', KEYS[2], 'MINID', string.format('%d', floor + 1))
end
redis.call('HSET', KEYS[1], 'last_seq', last, 'acked_seq', acked, 'bytes', bytes, 'floor', floor)
touch()
return 0
""".replace("ENTRY_BYTES", str(ENTRY_BYTES))

# ARGV[3..] = field/value pairs: only what changed (never the epoch or the seqs).
UPDATE = """
local f = fence()
if f ~= 0 then return f end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
touch()
return 0
"""

# ARGV[3] = how many ids to keep, ARGV[4..] = client event ids just applied.
ADD_IDS = """
local f = fence()
if f ~= 0 then return f end
local ids = cjson.decode(redis.call('HGET', KEYS[1], 'recent_event_ids') or '[]')
local known = {}
for _, id in ipairs(ids) do known[id] = true end
for i = 4, #ARGV do
  if not known[ARGV[i]] then
    table.insert(ids, ARGV[i])
    known[ARGV[i]] = true
  end
end
local keep = tonumber(ARGV[3])
local out = {}
for i = math.max(1, #ids - keep + 1), #ids do table.insert(out, ids[i]) end
local text = '[]'
if #out > 0 then text = cjson.encode(out) end
redis.call('HSET', KEYS[1], 'recent_event_ids', text)
touch()
return 0
"""

DELETE = """
local f = fence()
if f == -1 then return f end
redis.call('DEL', KEYS[1], KEYS[2])
return 0
"""

# Not fenced, writes nothing. KEYS[1] = rec, KEYS[2] = log; ARGV[1] = first entry id.
# The floor, the log and the clock from one instant, in one slot (a Cluster refuses
# a MULTI/EXEC holding the keyless TIME).
READ = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local floor = redis.call('HGET', KEYS[1], 'floor')
return {floor, redis.call('XRANGE', KEYS[2], ARGV[1], '+'), now}
"""


def session_keys(session_id: str) -> tuple[str, str]:
    """The record and log keys of a session: one hash tag, hence one Cluster slot."""
    base = f"{KEY_PREFIX}:{{{session_id}}}"
    return f"{base}:rec", f"{base}:log"
