"""What one client may cost the proxy, bounded (docs/protocol.md): an oversize frame
closes with 1009 and a reason, an idle session is warned then ended, a session ends at
its maximum duration, an upgrade that never completes is closed, and an idle emulated
session has no timer ticking.
"""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from proxy.emulated.runner import EmulatedRunner
from tests.hardening_helpers import KINDS, codes, eventually
from tests.servers import closed, connect, proxy, proxy_config, proxy_with_state, reference, ws_url


async def test_an_oversize_frame_closes_with_1009_and_a_reason() -> None:
    async with reference("turn") as upstream:
        cfg = proxy_config({"m": upstream}, server={"max_frame_bytes": 64 * 1024})
        async with proxy(cfg) as base, connect(ws_url(base)) as c:
            await c.until("session.created")
            # Within twice the limit: read whole and refused with a reason (a frame
            # bigger still is refused from its header, unread: tests/test_client_memory.py).
            big = '{"type":"input_audio_buffer.append","audio":"' + "A" * 100_000 + '"}'
            await c.ws.send_str(big)
            msg = await c.ws.receive(timeout=10)
            assert msg.type == aiohttp.WSMsgType.CLOSE
            assert c.ws.close_code == 1009
            assert "65536 bytes" in msg.extra


@pytest.mark.parametrize("kind", KINDS)
async def test_an_idle_session_is_warned_then_ended(kind: str) -> None:
    server = {"idle_timeout_s": 1.5, "idle_warning_s": 1.0}
    async with (
        reference(kind) as upstream,
        proxy_with_state(proxy_config({"m": upstream}, server=server)) as (base, state),
    ):
        async with connect(ws_url(base)) as c:
            await c.until("session.created")
            warning = await c.until("error")
            assert warning["error"]["code"] == "session_idle_timeout"
            assert await closed(c) == 1000
        # Ended, not in a disconnect grace: nothing holds the upstream session.
        await eventually(lambda: not state.live and not state.occupied())


async def test_a_session_ends_at_its_maximum_duration() -> None:
    async with reference("turn") as upstream:
        cfg = proxy_config({"m": upstream}, server={"max_session_s": 1.5})
        async with proxy(cfg) as base, connect(ws_url(base)) as c:
            await c.until("session.created")

            async def busy() -> None:
                while True:
                    await c.send({"type": "input_audio_buffer.clear"})
                    await asyncio.sleep(0.2)

            chatter = asyncio.create_task(busy())
            try:
                assert await closed(c) == 1000
            finally:
                chatter.cancel()
            assert "session_expired" in codes(c)


async def test_a_request_that_never_completes_its_upgrade_is_closed() -> None:
    cfg = proxy_config({}, server={"http_handshake_timeout_s": 1.0})
    async with proxy(cfg) as base:
        port = int(base.rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /v1/realtime?model=m HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n")
        await writer.drain()
        async with asyncio.timeout(10):
            assert await reader.read() == b""
        writer.close()


# ---------------------------------------------------------------- idle cost


@pytest.mark.parametrize("kind", ["duplex-no-barge-in", "turn"])
async def test_an_idle_emulated_session_schedules_no_ticks(kind: str) -> None:
    async with (
        reference(kind) as upstream,
        proxy_with_state(proxy_config({"m": upstream})) as (base, state),
        connect(ws_url(base)) as c,
    ):
        await c.until("session.created")
        [runner] = state.live.values()
        assert isinstance(runner, EmulatedRunner)
        await asyncio.wait_for(runner.ticker.dormant.wait(), 20)
        fed = runner.ticker.fed
        await asyncio.sleep(0.5)  # ten ticks' worth at the old fixed 50 ms
        assert runner.ticker.fed == fed and runner.ticker.dormant.is_set()
        # ...and an event wakes it up again.
        await c.send({"type": "input_audio_buffer.clear"})
        await eventually(lambda: runner.ticker.fed > fed)
