"""``bench/session_wire.py``'s lean client against a real aiohttp WebSocket server on
loopback: its masked appends arrive as the clip's audio, in order; it finds a speech
event and the probe's error behind frames of every length form (7, 16 and 64-bit, one
of them larger than a read), and answers a ping."""

from __future__ import annotations

import asyncio
import base64
import json
import sys

import aiohttp
from aiohttp import web

from tests.servers import ROOT

sys.path.insert(0, str(ROOT / "bench"))

from session_load import PROBES, Clips, Observations, _append
from session_wire import Ticker, WireClips, run_lean


async def test_the_lean_client_sends_the_clip_and_reads_what_the_bench_reads() -> None:
    pcm = [bytes([i]) * 960 for i in range(1, 8)]
    clips = Clips([[_append(p) for p in pcm]], _append(b"\0" * 960))
    audio: list[bytes] = []
    pong: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    async def handler(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=False, compress=False, max_msg_size=0)
        await ws.prepare(request)
        await ws.send_str('{"type":"session.created"}')
        async for msg in ws:
            if msg.type == aiohttp.WSMsgType.PONG and not pong.done():
                pong.set_result(msg.data)
            if msg.type != aiohttp.WSMsgType.TEXT:
                continue
            ev = json.loads(msg.data)
            if ev["type"] == "session.event_ack":
                await ws.send_str('{"type":"error","error":{"code":"x"}}')
            elif ev["type"] == "input_audio_buffer.append":
                audio.append(base64.b64decode(ev["audio"]))
                if len(audio) == 3:
                    for size in (10, 300, 200_000):
                        delta = "A" * size
                        await ws.send_str(f'{{"type":"response.output_audio.delta","d":"{delta}"}}')
                    await ws.send_str(
                        '{"type":"input_audio_buffer.speech_started","audio_start_ms":20}'
                    )
                    await ws.ping(b"beat")
        return ws

    app = web.Application()
    app.router.add_get("/v1/realtime", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    obs, stop = Observations(), asyncio.Event()
    ticker = Ticker()
    ticking = asyncio.create_task(ticker.run(stop))
    url = f"ws://127.0.0.1:{port}/v1/realtime?model=m"
    client = asyncio.create_task(
        run_lean(ticker, url, WireClips.frame(clips), 0, obs, stop, PROBES["emulated"])
    )
    try:
        assert await asyncio.wait_for(pong, 10) == b"beat"
        for _ in range(200):
            if obs.probes and obs.vad and len(audio) >= len(pcm) + 2:
                break
            await asyncio.sleep(0.05)
    finally:
        stop.set()
        await asyncio.gather(ticking, client)
        await runner.cleanup()
    assert obs.opened == 1 and obs.errors == []
    assert audio[: len(pcm)] == pcm and audio[len(pcm)] == b"\0" * 960
    assert [key for key in obs.vad] == [("speech_started", 0)]
    assert len(obs.probes) >= 1 and obs.late_sends
