"""A ``TapQueue`` (``proxy/ws_direct.py``) never lets a frame overtake one parsed
before it.

aiohttp parks the rest of a socket read that fills its queue (a frame over the
queue's limit), and parses it inside the read that takes that big frame off the
queue, before that read returns it: a small frame parsed then meets an empty queue
while the big one is still on its way to the reader. Whether the reader was waiting
when the bytes came, or busy (asleep in ``proxy/client_watch.admit``, awaiting a
send) and re-arms its taps only after they were queued and parked, the small frame
must follow the big one. The queue alone with aiohttp's parser, and end to end: a
client's big frame and a small one in one write while the proxy's reader sleeps over
its audio allowance, with the direct paths on and off.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import struct

import aiohttp
import pytest
from aiohttp import web

from bench.echo_upstream import SESSION_CREATED
from proxy import ws_direct
from tests.servers import connect, proxy, proxy_config, serve_app, ws_url
from tests.socket_protocol import PausableProtocol


def _frame(text: str, mask: bool = False) -> bytes:
    """One text frame: unmasked, as a server sends it, or masked, as a client does."""
    payload = text.encode()
    n, bit = len(payload), 0x80 if mask else 0
    if n < 126:
        head = struct.pack("!BB", 0x81, bit | n)
    elif n < 65536:
        head = struct.pack("!BBH", 0x81, bit | 126, n)
    else:
        head = struct.pack("!BBQ", 0x81, bit | 127, n)
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


BIG = json.dumps({"type": "big", "pad": "a" * 200_000})  # over the queue's limit
SMALL = json.dumps({"type": "small"})


def _queue_and_tap() -> tuple[ws_direct.TapQueue, object, list[str], ws_direct.Tap]:
    queue = ws_direct.TapQueue(PausableProtocol(), 2**16, loop=asyncio.get_running_loop())
    parser = ws_direct._Parser(queue, 2**26, compress=False, decode_text=True)
    order: list[str] = []

    def tap(text: str) -> bool:
        if len(text) > 32 * 1024:  # too big for a direct write, as relay.py decides
            return False
        order.append(json.loads(text)["type"])
        return True

    return queue, parser, order, tap


async def _read(queue: ws_direct.TapQueue, tap: ws_direct.Tap, order: list[str]) -> None:
    """As relay.upstream_to_client and ClientChannel._read: arm, read, disarm."""
    for _ in range(2):
        queue.arm(tap, None)
        msg = await queue.read()
        queue.tap = queue.raw = None
        order.append(json.loads(msg[1])["type"])


async def test_a_frame_parsed_while_the_reader_holds_a_big_one_waits_behind_it() -> None:
    queue, parser, order, tap = _queue_and_tap()
    task = asyncio.create_task(_read(queue, tap, order))
    await asyncio.sleep(0)  # the reader waits, armed
    parser.feed_data(_frame(BIG) + _frame(SMALL))  # one socket read
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(1):
            await task
    assert order[:2] == ["big", "small"], order


async def test_a_frame_parked_while_the_reader_was_busy_waits_behind_the_big_one() -> None:
    queue, parser, order, tap = _queue_and_tap()
    parser.feed_data(_frame(BIG) + _frame(SMALL))  # the reader is busy: nothing armed
    assert queue._stalled_reader is not None  # the small frame's parse is parked
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(1):
            await _read(queue, tap, order)  # it comes back: arms (or not), reads
    assert order[:2] == ["big", "small"], order


@pytest.fixture(params=[True, False], ids=["direct", "queued"])
def enabled(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    monkeypatch.setattr(ws_direct, "ENABLED", request.param)
    return bool(request.param)


async def test_a_small_client_frame_behind_a_big_one_goes_up_behind_it(enabled: bool) -> None:
    got: list[str] = []
    done = asyncio.Event()

    async def handler(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        await ws.send_json(SESSION_CREATED)
        async for msg in ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                break
            if (eid := json.loads(msg.data).get("event_id")) is not None:
                got.append(eid)
            if eid == "small":
                done.set()
        return ws

    app = web.Application()
    app.router.add_get("/v1/realtime", handler)
    async with serve_app(app) as base:
        upstream = base.replace("http://", "ws://") + "/v1/realtime"
        routes = [{"model": "m", "mode": "passthrough", "upstream": upstream}]
        server = {"input_realtime_factor": 1.0, "input_burst_s": 0.5, "input_rate_grace_s": 30}
        config = proxy_config({}, routes=routes, server=server)
        async with proxy(config) as pbase, connect(ws_url(pbase, duplex="1")) as c:
            await c.until("session.created")
            # 0.45 s of audio (16 kHz) twice against a 0.5 s burst (one append longer than
            # the burst would be refused whole): the reader sleeps on the second (admit).
            for eid in ("a0", "a1"):
                await c.send(
                    {"type": "input_audio_buffer.append", "event_id": eid, "audio": "A" * 19200}
                )
            await asyncio.sleep(0.05)
            # One write while it sleeps: a frame over the client queue's limit (512 KiB),
            # then a small one.
            big = {"type": "conversation.item.create", "event_id": "big", "pad": "x" * 600_000}
            small = {"type": "input_audio_buffer.commit", "event_id": "small"}
            transport = c.ws._writer.transport  # type: ignore[attr-defined]
            transport.write(_frame(json.dumps(big), True) + _frame(json.dumps(small), True))
            async with asyncio.timeout(10):
                await done.wait()
    assert got == ["a0", "a1", "big", "small"], got
