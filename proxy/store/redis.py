"""Redis session store: lets a client resume on any replica (DESIGN §6).

Keys, all under one Cluster hash tag so a session lives in one slot and every Lua
script may touch all of them:

* ``dxp:{<session_id>}:rec`` - hash of the SessionRecord fields, each value JSON
  (orjson), plus ``floor`` (highest seq dropped from the log) and ``bytes`` (log size).
* ``dxp:{<session_id>}:log`` - stream of server events, entry id ``<seq>-0``, fields
  ``e`` (event text) and ``t`` (Redis server time in ms, for the age bound).

Every write runs as one Lua script that first checks the lease epoch, so a replica
that lost a session can never overwrite the new owner's state, and refreshes the TTL
(``disconnect_grace_s``) of both keys. Times come from Redis ``TIME`` so replicas
with skewed clocks agree on the age of an event.

Redis being down must never stall or crash a live session: every call is bounded by
``timeout_s`` (socket timeouts plus ``asyncio.timeout``), is never retried (a retried
create or take_over could report a false LeaseLost) and any failure surfaces as
StoreUnavailable. The client connects lazily and reconnects on the next call, so an
outage at startup or mid-run heals without recreating the store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import fields
from typing import Any, TypeVar

import orjson
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from proxy.config import StoreConfig
from proxy.metrics import Metrics
from proxy.store import check_session_id, valid_session_id
from proxy.store.base import LeaseLost, SessionRecord, SessionStore, StoreUnavailable

T = TypeVar("T")

KEY_PREFIX = "dxp"
RECORD_FIELDS = tuple(f.name for f in fields(SessionRecord))
# Script results: >= 0 success (take_over returns the new epoch), else these.
_LOST, _GONE = -1, -2

# KEYS[1] = rec, KEYS[2] = log; ARGV[1] = ttl ms, ARGV[2] = the caller's epoch.
_FENCE = """
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
_CREATE = """
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
_TAKE_OVER = """
local f = fence()
if f ~= 0 then return f end
local epoch = redis.call('HINCRBY', KEYS[1], 'epoch', 1)
redis.call('HSET', KEYS[1], 'owner', ARGV[3])
touch()
return epoch
"""

# ARGV[3] = acked_seq, ARGV[4] = last_seq, ARGV[5..] = other field/value pairs.
# Sequence numbers only move forward, whatever a stale snapshot says.
_SAVE = """
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
# highest seq dropped so events_after can report the gap.
_APPEND = """
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
    bytes = bytes + #ARGV[i + 1]
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
      bytes = bytes - #text
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
"""

_DELETE = """
local f = fence()
if f == -1 then return f end
redis.call('DEL', KEYS[1], KEYS[2])
return 0
"""


def session_keys(session_id: str) -> tuple[str, str]:
    """The record and log keys of a session: one hash tag, hence one Cluster slot."""
    base = f"{KEY_PREFIX}:{{{session_id}}}"
    return f"{base}:rec", f"{base}:log"


def _dumps(value: Any) -> bytes:
    return orjson.dumps(value)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class RedisStore(SessionStore):
    def __init__(self, config: StoreConfig, metrics: Metrics | None = None) -> None:
        self._config = config
        self._metrics = metrics
        self._ttl_ms = max(1, round(config.disconnect_grace_s * 1000))
        self._client = aioredis.Redis.from_url(
            config.url,
            socket_timeout=config.timeout_s,
            socket_connect_timeout=config.timeout_s,
            retry=Retry(NoBackoff(), 0),
            # Probe connections idle this long before reuse (half-open TCP after a
            # network blip); the pool already drops connections the server closed.
            health_check_interval=15,
        )
        self._scripts = {
            name: self._client.register_script(_FENCE + body)
            for name, body in (
                ("create", _CREATE),
                ("take_over", _TAKE_OVER),
                ("save", _SAVE),
                ("append", _APPEND),
                ("delete", _DELETE),
            )
        }

    async def healthy(self) -> bool:
        try:
            await self._call("ping", self._client.ping)
        except StoreUnavailable:
            return False
        return True

    async def close(self) -> None:
        await self._client.aclose()

    async def create(self, record: SessionRecord) -> None:
        check_session_id(record.session_id)
        values = self._encode(record)
        values["floor"] = record.last_seq
        values["bytes"] = 0
        pairs = [x for kv in values.items() for x in kv]
        token = values["token_hash"]
        await self._script("create", record.session_id, [0, token, *pairs], "already exists")

    async def load(self, session_id: str) -> SessionRecord | None:
        if not valid_session_id(session_id):
            return None
        rec_key, _ = session_keys(session_id)
        raw = await self._call("load", lambda: self._client.hgetall(rec_key))
        if not raw:
            return None
        # Unknown fields (a newer replica mid-rollout, or floor/bytes) are ignored.
        known = {_text(k): orjson.loads(v) for k, v in raw.items()}
        return SessionRecord(**{k: v for k, v in known.items() if k in RECORD_FIELDS})

    async def take_over(self, session_id: str, owner: str, expected_epoch: int) -> int:
        check_session_id(session_id)
        return await self._script("take_over", session_id, [expected_epoch, _dumps(owner)])

    async def save(self, record: SessionRecord) -> None:
        check_session_id(record.session_id)
        values = self._encode(record)
        acked, last = values.pop("acked_seq"), values.pop("last_seq")
        del values["epoch"]  # the fence, never written by save
        pairs = [x for kv in values.items() for x in kv]
        await self._script("save", record.session_id, [record.epoch, acked, last, *pairs])

    async def append_events(
        self, session_id: str, epoch: int, events: list[tuple[int, str]], acked_seq: int
    ) -> None:
        check_session_id(session_id)
        cfg = self._config
        args: list[Any] = [epoch, acked_seq, cfg.replay_max_bytes]
        args.append(max(0, round(cfg.replay_max_age_s * 1000)))
        for seq, text in events:
            args += (seq, text)
        await self._script("append", session_id, args)

    async def events_after(self, session_id: str, seq: int) -> list[tuple[int, str]] | None:
        if not valid_session_id(session_id):
            return None
        rec_key, log_key = session_keys(session_id)
        start = "-" if seq < 0 else f"{seq + 1}-0"

        async def read() -> list[Any]:
            # MULTI/EXEC: the floor, the log and the clock from one instant.
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.hget(rec_key, "floor")
                pipe.xrange(log_key, start, "+")
                pipe.time()
                result: list[Any] = await pipe.execute()
                return result

        floor_raw, entries, (secs, micros) = await self._call("events_after", read)
        if floor_raw is None or seq < int(floor_raw):
            return None
        cutoff = secs * 1000 + micros // 1000 - round(self._config.replay_max_age_s * 1000)
        out: list[tuple[int, str]] = []
        for entry_id, kv in entries:
            if int(kv[b"t"]) < cutoff:
                return None  # aged out, just not trimmed yet: still a gap
            out.append((int(entry_id.split(b"-")[0]), kv[b"e"].decode()))
        return out

    async def delete(self, session_id: str, epoch: int) -> None:
        check_session_id(session_id)
        await self._script("delete", session_id, [epoch])

    def _encode(self, record: SessionRecord) -> dict[str, Any]:
        limit = self._config.recent_event_ids
        values = {name: getattr(record, name) for name in RECORD_FIELDS}
        values["recent_event_ids"] = record.recent_event_ids[-limit:] if limit > 0 else []
        return {k: _dumps(v) for k, v in values.items()}

    async def _script(
        self, name: str, session_id: str, args: list[Any], lost: str = "epoch moved on"
    ) -> int:
        """Run a fenced script; its negative results become LeaseLost."""
        script = self._scripts[name]
        keys = session_keys(session_id)
        result = int(await self._call(name, lambda: script(keys=keys, args=[self._ttl_ms, *args])))
        if result == _LOST:
            raise LeaseLost(f"session {session_id}: {lost}")
        if result == _GONE:
            raise LeaseLost(f"session {session_id}: expired or unknown")
        return result

    async def _call(self, op: str, fn: Callable[[], Awaitable[T]]) -> T:
        """One bounded round trip: any failure or timeout is StoreUnavailable."""
        try:
            async with asyncio.timeout(self._config.timeout_s):
                result = await fn()
        except (RedisError, OSError, TimeoutError) as exc:
            self._set_up(0)
            raise StoreUnavailable(f"redis {op} failed: {exc!r}") from exc
        self._set_up(1)
        return result

    def _set_up(self, value: int) -> None:
        if self._metrics is not None:
            self._metrics.store_up.set(value)
