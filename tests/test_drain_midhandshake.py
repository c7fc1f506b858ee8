"""A resume or an opening still under way as its replica drains (docs/protocol.md,
"Close codes"). Before it stores or rotates anything it is refused with
``server_shutting_down`` and the token the client has still resumes elsewhere. Once it
has, the drain waits for it (``ClientSession.drain``), so the client is told the token
the store now holds (``session.resumed`` / ``session.created``) before its 1012, and
resumes elsewhere with it. Closed at once, the client kept a token a resume had
rotated away, or never learned the token of a session that was stored and handed on."""

from __future__ import annotations

from typing import Any

import pytest

from tests.drain_handshake import drained_mid_handshake, gated_upstream, refused
from tests.redis_server import RedisServer
from tests.servers import Client, connect, proxy_with_state, resume_of, store_config, ws_url

pytestmark = [pytest.mark.redis]


def told(c: Client, kind: str) -> dict[str, Any]:
    kinds = [e.get("type") for e in c.events]
    assert kind in kinds, f"closed by the drain without its token: {kinds}"
    return next(e for e in c.events if e.get("type") == kind)


async def resumes_on(base: str, opening: dict[str, Any], **query: str) -> None:
    async with connect(ws_url(base, model=None, **query)) as c:
        await c.send(resume_of(opening))
        first = await c.recv()
        assert first["type"] == "session.resumed", first


@pytest.mark.parametrize("at", ["dial", "save"])
async def test_a_resume_drained_mid_handshake_keeps_a_token_that_resumes(
    redis_server_session: RedisServer, monkeypatch: pytest.MonkeyPatch, at: str
) -> None:
    async with gated_upstream() as (up, gate):
        config = store_config(up, redis_server_session.url)
        async with proxy_with_state(config) as (a, _):
            async with connect(ws_url(a)) as c1:
                created = await c1.until("session.created")
            c2 = await drained_mid_handshake(config, gate, at, resume_of(created), monkeypatch)
            if at == "dial":  # nothing rotated yet: refused, its token unchanged
                refused(c2)
                await resumes_on(a, created)
            else:  # the rotation under way: told its new token
                resumed = told(c2, "session.resumed")
                assert resumed["resume_token"] != created["resume_token"]
                await resumes_on(a, resumed)


@pytest.mark.parametrize("at", ["dial", "create"])
async def test_a_session_opened_mid_drain_is_refused_or_told_its_token(
    redis_server_session: RedisServer, monkeypatch: pytest.MonkeyPatch, at: str
) -> None:
    async with gated_upstream() as (up, gate):
        config = store_config(up, redis_server_session.url)
        async with proxy_with_state(config) as (a, _):
            c = await drained_mid_handshake(config, gate, at, None, monkeypatch)
            if at == "dial":  # nothing stored: refused
                refused(c)
            else:  # being stored: told its token, and it resumes elsewhere
                created = told(c, "session.created")
                assert created.get("resume_token")
                await resumes_on(a, created)


@pytest.mark.parametrize("at", ["dial", "create"])
async def test_a_passthrough_session_opened_mid_drain_is_refused_or_told_its_token(
    redis_server_session: RedisServer, monkeypatch: pytest.MonkeyPatch, at: str
) -> None:
    async with gated_upstream("duplex") as (up, gate):
        config = store_config(up, redis_server_session.url)
        async with proxy_with_state(config) as (a, _):
            c = await drained_mid_handshake(config, gate, at, None, monkeypatch, duplex="1")
            if at == "dial":
                refused(c)
            else:  # bound in the store: told its upstream's token
                created = told(c, "session.created")
                assert created.get("resume_token")
                await resumes_on(a, created, duplex="1")
