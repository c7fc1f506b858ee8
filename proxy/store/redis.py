"""Redis session store: lets a client resume on any replica (docs/architecture.md).

The keys and the fenced Lua scripts that write them are in ``redis_scripts``.

The client (one server, a Redis Cluster or a Sentinel master) comes from
``redis_client``. Every key a call touches shares the session's hash tag, so each
script stays in one Cluster slot, and no command spans sessions.

Redis being down must never stall or crash a live session: every call is bounded by
``timeout_s`` (socket timeouts plus ``asyncio.timeout``) and any failure surfaces as
StoreUnavailable. A broken connection is retried on a fresh one (``redis_client``:
a stale pooled one after a restart or failover); a retried take_over whose first try
ran before the connection broke reports LeaseLost, which the resuming client sees as
a conflict. The client connects lazily and reconnects on the next call, so an outage
at startup or mid-run heals without recreating the store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import fields
from typing import Any, TypeVar

import orjson
from redis.exceptions import RedisError

from proxy.config import StoreConfig
from proxy.metrics import Metrics
from proxy.store.base import (
    LeaseLost,
    SessionRecord,
    SessionStore,
    StoreUnavailable,
    check_update,
)
from proxy.store.ids import check_session_id, valid_session_id
from proxy.store.redis_client import open_client
from proxy.store.redis_scripts import (
    ADD_IDS,
    APPEND,
    CREATE,
    DELETE,
    FENCE,
    GONE,
    LOST,
    MARK,
    READ,
    REBIND,
    SAVE,
    TAKE_OVER,
    UPDATE,
    session_keys,
)

T = TypeVar("T")

RECORD_FIELDS = tuple(f.name for f in fields(SessionRecord))


def _dumps(value: Any) -> bytes:
    return orjson.dumps(value)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class RedisStore(SessionStore):
    def __init__(self, config: StoreConfig, metrics: Metrics | None = None) -> None:
        self._config = config
        self._metrics = metrics
        self._ttl_ms = max(1, round(config.disconnect_grace_s * 1000))
        self._opened = open_client(config)
        self._client = self._opened.client
        self._scripts = {
            name: self._client.register_script(FENCE + body)
            for name, body in (
                ("create", CREATE),
                ("take_over", TAKE_OVER),
                ("rebind", REBIND),
                ("mark", MARK),
                ("save", SAVE),
                ("append", APPEND),
                ("delete", DELETE),
                ("update", UPDATE),
                ("add_ids", ADD_IDS),
            )
        }
        self._read = self._client.register_script(READ)

    async def healthy(self) -> bool:
        try:
            await self._call("ping", self._client.ping)
        except StoreUnavailable:
            return False
        return True

    async def close(self) -> None:
        await self._opened.aclose()

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

    async def rebind(self, session_id: str, owner: str, old_hash: str, new_hash: str) -> int:
        check_session_id(session_id)
        args = [_dumps(owner), _dumps(old_hash), _dumps(new_hash)]
        return await self._script("rebind", session_id, args, "resume token rotated elsewhere")

    async def rebind_mark(
        self, session_id: str, epoch: int, mark: str, until_ms: int, now_ms: int
    ) -> int:
        check_session_id(session_id)
        return await self._script("mark", session_id, [epoch, mark, until_ms, now_ms])

    async def save(self, record: SessionRecord) -> None:
        check_session_id(record.session_id)
        values = self._encode(record)
        acked, last = values.pop("acked_seq"), values.pop("last_seq")
        del values["epoch"]  # the fence, never written by save
        pairs = [x for kv in values.items() for x in kv]
        await self._script("save", record.session_id, [record.epoch, acked, last, *pairs])

    async def update(self, session_id: str, epoch: int, fields: dict[str, Any]) -> None:
        check_session_id(session_id)
        check_update(fields)
        pairs = [x for k, v in fields.items() for x in (k, _dumps(v))]
        await self._script("update", session_id, [epoch, *pairs])

    async def add_event_ids(self, session_id: str, epoch: int, ids: list[str]) -> None:
        check_session_id(session_id)
        keep = self._config.recent_event_ids
        if keep > 0 and ids:
            await self._script("add_ids", session_id, [epoch, keep, *ids[-keep:]])

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
        keys = session_keys(session_id)
        start = "-" if seq < 0 else f"{seq + 1}-0"
        floor_raw, entries, now_ms = await self._call(
            "events_after", lambda: self._read(keys=keys, args=[start])
        )
        if floor_raw is None or seq < int(floor_raw):
            return None
        cutoff = now_ms - round(self._config.replay_max_age_s * 1000)
        out: list[tuple[int, str]] = []
        for entry_id, flat in entries:
            kv = dict(zip(flat[::2], flat[1::2], strict=True))  # a script's raw XRANGE reply
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
        if result == LOST:
            raise LeaseLost(f"session {session_id}: {lost}")
        if result == GONE:
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
