"""The faults the duplex reference backends inject on purpose (replays that duplicate or
drop, a cancel ignored, deaf while speaking, starved sessions), and their outbound
queue dropping a client that stops reading (``proxy/reference/outbound.py``).

On the lenient preset (``tests/reference_duplex_client.py``, ``backend``).
"""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from aiohttp import web

from proxy.reference import ReferenceOptions
from proxy.reference.outbound import Outbound
from tests.reference_duplex_client import (
    OVERLAP,
    TURN,
    after_turn,
    backend,
    opened,
    peer,
    resume_request,
)

pytestmark = pytest.mark.timeout(60)


async def test_fault_replay_duplicates_and_drops() -> None:
    for fault, check in (
        ("replay_duplicates", lambda seqs: len(seqs) != len(set(seqs))),
        ("replay_drops", lambda seqs: seqs != list(range(seqs[0], seqs[0] + len(seqs)))),
    ):
        options = ReferenceOptions(fidelity="lenient", faults=frozenset({fault}))
        async with backend("duplex", options=options) as (http, base):
            async with peer(http, f"{base}/v1/duplex?model=m") as p:
                created = await opened(p)
                for _ in range(4):
                    await p.send({"type": "session.heartbeat"})
                await p.until("session.heartbeat_ack", where=lambda e: e["server_event_seq"] == 5)
            async with peer(http, f"{base}/v1/duplex") as p:
                await p.send(resume_request(created, 1))
                assert (await p.recv())["type"] == "session.resumed"
                await p.send({"type": "session.heartbeat"})
                await p.until("session.heartbeat_ack", where=lambda e: e["server_event_seq"] == 6)
                seqs = [int(str(e["server_event_seq"])) for e in p.events[1:]]
                assert check(seqs), (fault, seqs)


async def test_fault_ignore_cancel_keeps_audio_flowing() -> None:
    options = ReferenceOptions(fidelity="lenient", faults=frozenset({"ignore_cancel"}))
    async with after_turn("duplex", reply_ms=1400, options=options) as p:
        first = await p.until("response.output_audio.delta")
        await p.send({"type": "response.cancel"})
        done = await p.until("response.done")
        assert isinstance(done["response"], dict) and done["response"]["status"] == "cancelled"
        late = await p.until("response.output_audio.delta")
        assert late["response_id"] == first["response_id"]


async def test_fault_deaf_while_speaking_never_barges_in() -> None:
    options = ReferenceOptions(fidelity="lenient", faults=frozenset({"deaf_while_speaking"}))
    async with after_turn("duplex", reply_ms=1500, options=options) as p:
        await p.until("response.output_audio.delta")
        await p.speak(OVERLAP)
        done = await p.until("response.done")
        assert isinstance(done["response"], dict) and done["response"]["status"] == "completed"
        assert not p.of("overlap.decision")


async def test_fault_starve_sessions_serialises_audio() -> None:
    options = ReferenceOptions(fidelity="lenient", faults=frozenset({"starve_sessions"}))
    async with backend("duplex", reply_ms=600, options=options) as (http, base):
        async with (
            peer(http, f"{base}/v1/realtime?model=m") as first,
            peer(http, f"{base}/v1/realtime?model=m") as second,
        ):
            await opened(first)
            await opened(second)
            await second.speak(TURN)
            await second.until("response.created")
            with pytest.raises(TimeoutError):
                await second.until("response.output_audio.delta", within_s=0.8)
            await first.send({"type": "session.close"})
            await first.until("session.closed")
            await second.until("response.output_audio.delta", within_s=3.0)


@pytest.mark.parametrize("unbounded", [False, True])
async def test_outbound_drops_a_client_that_stops_reading(unbounded: bool) -> None:
    dropped = asyncio.Event()
    outbounds: list[Outbound] = []

    async def flood(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        out = Outbound(
            ws, request.transport, max_bytes=None if unbounded else 1 << 20, on_drop=dropped.set
        )
        outbounds.append(out)
        blob = "x" * 65536
        for _ in range(400):  # ~26 MB, far past any socket buffer
            out.send_text(blob)
            await asyncio.sleep(0)
        await asyncio.sleep(1.0)
        await out.finish(0.1)
        return ws

    app = web.Application()
    app.router.add_get("/flood", flood)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        async with aiohttp.ClientSession() as http, http.ws_connect(f"ws://127.0.0.1:{port}/flood"):
            await asyncio.sleep(0.6)  # never read
            if unbounded:
                assert not dropped.is_set() and outbounds[0].queued_bytes > 4 << 20
            else:
                await asyncio.wait_for(dropped.wait(), 2.0)
                assert outbounds[0].dropped
    finally:
        await runner.cleanup()
