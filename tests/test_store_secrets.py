"""Secrets in the session store (README, "Security notes"): the upstream's resume
token is stored only sealed under ``store.secret_key``, or not at all without one.
Real Redis, two proxy replicas, the reference duplex backend."""

from __future__ import annotations

import base64
import secrets
from typing import Any

import orjson
import pytest
import redis.asyncio as aioredis

from proxy.config import ConfigError, config_from_dict
from proxy.store.secret_box import SecretBox
from tests.redis_server import RedisServer
from tests.resume_client import (
    answered,
    mid_answer,
    reattached,
    resumed,
    wait_persisted,
)
from tests.servers import connect, reference, replica, store_config, ws_url

pytestmark = [pytest.mark.redis]


def new_key() -> str:
    return base64.b64encode(secrets.token_bytes(32)).decode()


async def redis_dump(url: str) -> tuple[bytes, list[Any]]:
    """Every byte Redis holds (all keys, every field and stream entry), and every
    value that parses as JSON."""
    client = aioredis.Redis.from_url(url)
    raw, parsed = b"", []
    try:
        async for key in client.scan_iter(count=1000):
            kind = (await client.type(key)).decode()
            values: list[bytes] = []
            if kind == "hash":
                for f, v in (await client.hgetall(key)).items():
                    values += [f, v]
            elif kind == "stream":
                for _, kv in await client.xrange(key):
                    values += [x for pair in kv.items() for x in pair]
            elif kind == "string":
                values.append(await client.get(key) or b"")
            raw += key + b"\n" + b"\n".join(values) + b"\n"
            for v in values:
                try:
                    parsed.append(orjson.loads(v))
                except orjson.JSONDecodeError:
                    pass
    finally:
        await client.aclose()
    return raw, parsed


def tokens_in(value: Any) -> list[Any]:
    """The values of every ``token`` / ``resume_token`` key, at any depth."""
    out: list[Any] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k in ("token", "resume_token"):
                out.append(v)
            out += tokens_in(v)
    elif isinstance(value, list):
        for v in value:
            out += tokens_in(v)
    return out


async def talk_then_move(
    redis_url: str, key_a: str, key_b: str, **b_store: Any
) -> tuple[bytes, list[Any], str, dict[str, int]]:
    """A barge_in_emulated session answers on replica a, moves to b mid-answer and
    talks on. Redis as it was before the move, the session id, b's reattach counts."""
    async with (
        reference("duplex-no-barge-in", reply_ms=2500) as up,
        replica(store_config(up, redis_url, secret_key=key_a), "a") as a,
        replica(store_config(up, redis_url, secret_key=key_b, **b_store), "b") as b,
    ):
        async with connect(ws_url(a)) as c1:
            s = await mid_answer(c1)
            s.take(c1)
            await wait_persisted(redis_url, s.sid, seq=s.last)
            raw, parsed = await redis_dump(redis_url)
        async with connect(ws_url(b)) as c2:
            await resumed(c2, s)
            await c2.until("response.done", timeout=20)
            await answered(c2)
        return raw, parsed, s.sid, await reattached(b)


@pytest.fixture
def own_redis_url(redis_server: RedisServer) -> str:
    return redis_server.url  # its own Redis: a dump holds this test's keys only


async def test_with_a_key_no_upstream_token_is_readable_and_the_upstream_session_moves(
    own_redis_url: str,
) -> None:
    key = new_key()
    raw, parsed, sid, counts = await talk_then_move(own_redis_url, key, key)
    found = [t for value in parsed for t in tokens_in(value) if t is not None]
    assert found, "the snapshot carries the upstream's token (sealed)"
    box = SecretBox(base64.b64decode(key))
    for sealed in found:
        assert isinstance(sealed, str) and sealed.startswith("dxs1."), sealed[:12]
        plain = box.open(sealed, sid)
        assert plain, "it opens with the key, for this session only"
        assert box.open(sealed, sid + "x") is None
        assert plain.encode() not in raw, "the plaintext token is nowhere in Redis"
    assert counts.get("resumed") == 1 and not counts.get("fresh"), counts


async def test_a_rotated_key_still_opens_what_the_old_one_sealed(own_redis_url: str) -> None:
    old, new = new_key(), new_key()
    *_, counts = await talk_then_move(own_redis_url, old, new, previous_secret_keys=[old])
    assert counts.get("resumed") == 1, counts


async def test_without_a_key_no_secret_is_stored_and_a_move_opens_a_fresh_upstream(
    own_redis_url: str,
) -> None:
    _, parsed, _, counts = await talk_then_move(own_redis_url, "", "")
    assert [t for value in parsed for t in tokens_in(value) if t is not None] == []
    assert counts.get("fresh") == 1 and not counts.get("resumed"), counts


def test_a_key_must_be_32_bytes_of_base64_and_a_sealed_value_cannot_be_altered() -> None:
    for bad in ("not base64!", base64.b64encode(b"short").decode()):
        with pytest.raises(ConfigError, match="secret key"):
            config_from_dict({"store": {"secret_key": bad}})
        with pytest.raises(ConfigError, match="secret key"):
            config_from_dict({"store": {"previous_secret_keys": [bad]}})
    key = secrets.token_bytes(32)
    box = SecretBox(key)
    sealed = box.seal("upstream-token", "sess_1")
    assert sealed is not None and "upstream-token" not in sealed
    assert box.open(sealed, "sess_1") == "upstream-token"
    head, body = sealed.rsplit(".", 1)
    flipped = body[:-2] + ("A" if body[-2] != "A" else "B") + body[-1]
    assert box.open(f"{head}.{flipped}", "sess_1") is None, "tampered"
    assert SecretBox(secrets.token_bytes(32)).open(sealed, "sess_1") is None, "unknown key"
    assert SecretBox(None, [key]).open(sealed, "sess_1") == "upstream-token", "retired key"
    assert SecretBox(None).seal("t", "s") is None, "no key: nothing sealed"
