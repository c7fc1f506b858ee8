"""A drain and the handshakes under way as it begins or as its timeout comes
(docs/protocol.md, "Close codes"): one that has not begun rotating a token or storing
a session is refused at once (``server_shutting_down``, 1012), a passthrough resume
included, and never rotates the upstream's token after; one still rotating or storing
at the drain's timeout is stopped, so the token its client has still resumes and no
session is stored that nobody can resume; and the drain keeps to
server.drain_timeout_s, with a client that never answers the close frame."""

from __future__ import annotations

import asyncio
import time

import pytest

from proxy.app import build_app
from proxy.state import ProxyState
from tests.drain_handshake import drained_mid_handshake, eventually, gated_upstream, refused
from tests.redis_server import RedisServer
from tests.servers import (
    closed,
    connect,
    proxy_config,
    proxy_with_state,
    resume_of,
    serve_app,
    ws_url,
)

pytestmark = [pytest.mark.redis]


async def test_passthrough_resume_at_dial_is_refused_not_rotated(
    redis_server_session: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held at the dial as the drain starts: refused, and the session.resume is never
    relayed (the upstream would rotate its token)."""
    async with gated_upstream("duplex") as (up, gate):
        config = proxy_config({"m": up}, store={"url": redis_server_session.url})
        async with proxy_with_state(config) as (a, _):
            async with connect(ws_url(a, duplex="1")) as c1:
                created = await c1.until("session.created")
            c2 = await drained_mid_handshake(
                config, gate, "dial", resume_of(created), monkeypatch, duplex="1"
            )
            refused(c2)


async def test_passthrough_resume_past_drain_timeout_keeps_its_token(
    redis_server_session: RedisServer,
) -> None:
    """A passthrough resume whose dial outlasts drain_timeout_s (a warming upstream
    holds upgrades): its client is closed, and the dial completing afterwards relays
    nothing, so the token the client has still resumes elsewhere."""
    async with gated_upstream("duplex") as (up, gate):
        config = proxy_config(
            {"m": up},
            store={"url": redis_server_session.url},
            server={"drain_timeout_s": 0.5},
        )
        async with proxy_with_state(config) as (a, _):
            async with connect(ws_url(a, duplex="1")) as c1:
                created = await c1.until("session.created")
            state = ProxyState(config=config, replica_id="b")
            serving = serve_app(build_app(config, state))
            b = await serving.__aenter__()
            gate.at, gate.shut = "dial", True
            async with connect(ws_url(b, model=None, duplex="1")) as c2:
                await c2.send(resume_of(created))
                await gate.reached.wait()
                shutdown = asyncio.create_task(serving.__aexit__(None, None, None))
                assert await closed(c2) == 1012
                gate.open.set()  # the dial completes while b's handler is still running
                await shutdown
            gate.shut = False
            kinds = [e.get("type") for e in c2.events]
            async with connect(ws_url(a, model=None, duplex="1")) as c3:
                await c3.send(resume_of(created))
                first = await c3.recv()
            # Correct: either c2 was told a new token, or the old one still resumes.
            assert "session.resumed" in kinds or first["type"] == "session.resumed", (
                kinds,
                first,
            )


async def test_opening_held_at_dial_is_refused_promptly(
    redis_server_session: RedisServer,
) -> None:
    """An opening held at the dial (or a wait for upstream capacity) when the drain
    starts has stored nothing: refused at once, not held for the drain's timeout."""
    async with gated_upstream() as (up, gate):
        config = proxy_config(
            {"m": up}, store={"url": redis_server_session.url}, server={"drain_timeout_s": 30.0}
        )
        state = ProxyState(config=config, replica_id="b")
        serving = serve_app(build_app(config, state))
        b = await serving.__aenter__()
        gate.at, gate.shut = "dial", True
        async with connect(ws_url(b)) as c:
            closing = asyncio.create_task(closed(c))
            await gate.reached.wait()
            shutdown = asyncio.create_task(serving.__aexit__(None, None, None))
            await eventually(lambda: state.draining)
            code = await closing  # the dial is still held: the drain did not wait for it
            gate.open.set()
            await shutdown
        codes = [e["error"]["code"] for e in c.events if e.get("type") == "error"]
        assert (code, codes) == (1012, ["server_shutting_down"])


@pytest.mark.parametrize("at", ["dial", "create"])
async def test_drain_keeps_its_timeout_with_a_silent_client(
    redis_server_session: RedisServer, monkeypatch: pytest.MonkeyPatch, at: str
) -> None:
    """A client that does not answer the close frame (ClientChannel.close waits 2 s for
    it), refused at its dial or closed at the drain's timeout while its session is
    being stored, does not stretch the drain past server.drain_timeout_s, which
    deploy/kubernetes budgets exactly (the sidecar's preStop sleeps 5 + 10 + 2)."""
    from proxy.app import _close_sessions

    async with gated_upstream() as (up, gate):
        config = proxy_config(
            {"m": up}, store={"url": redis_server_session.url}, server={"drain_timeout_s": 2.0}
        )
        state = ProxyState(config=config, replica_id="b")
        app = build_app(config, state)
        serving = serve_app(app)
        b = await serving.__aenter__()
        gate.at, gate.shut = at, True
        if at == "create":
            assert state.store is not None
            monkeypatch.setattr(state.store, at, gate.store(state.store.create))
        async with connect(ws_url(b)):  # never reads: no close reply
            await gate.reached.wait()
            t0 = time.monotonic()
            await _close_sessions(app)
            took = time.monotonic() - t0
            gate.open.set()
        await serving.__aexit__(None, None, None)
        # A deadline, not a speed: the drain's own timeouts end it at drain_timeout_s
        # (the margin is the loop's scheduling). Before, the close step after the
        # timeout added its 2 s wait for the close reply: 4.0 s here.
        assert took < config.server.drain_timeout_s + 1.0, round(took, 2)


@pytest.mark.parametrize("what", ["resume", "opening"])
async def test_handshake_still_storing_at_drain_timeout_is_stopped(
    redis_server_session: RedisServer, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    """A rotation (a resume held in the store's ``save``) or a session being stored (an
    opening held in ``create``) still under way at drain_timeout_s is stopped with its
    client's close: the token the client has still resumes, and nothing is stored
    for a token no one was told."""
    async with gated_upstream() as (up, gate):
        config = proxy_config(
            {"m": up}, store={"url": redis_server_session.url}, server={"drain_timeout_s": 0.5}
        )
        async with proxy_with_state(config) as (a, a_state):
            created = None
            if what == "resume":
                async with connect(ws_url(a)) as c1:
                    created = await c1.until("session.created")
            state = ProxyState(config=config, replica_id="b")
            serving = serve_app(build_app(config, state))
            b = await serving.__aenter__()
            at = "save" if what == "resume" else "create"
            gate.at, gate.shut = at, True
            monkeypatch.setattr(state.store, at, gate.store(getattr(state.store, at)))
            url = ws_url(b, model=None) if created else ws_url(b)
            async with connect(url) as c2:
                if created:
                    await c2.send(resume_of(created))
                await gate.reached.wait()
                sid = next(iter(state.sessions)).session_id
                shutdown = asyncio.create_task(serving.__aexit__(None, None, None))
                assert await closed(c2) == 1012
                gate.open.set()
                await shutdown
            gate.shut = False
            kinds = [e.get("type") for e in c2.events]
            if created:
                async with connect(ws_url(a, model=None)) as c3:
                    await c3.send(resume_of(created))
                    first = await c3.recv()
                assert "session.resumed" in kinds or first["type"] == "session.resumed", (
                    kinds,
                    first,
                )
            else:
                assert a_state.store is not None
                stored = await a_state.store.load(sid)
                assert "session.created" in kinds or stored is None, (kinds, stored)
