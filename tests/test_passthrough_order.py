"""Passthrough keeps the frames in order, whichever way each one goes.

Up: a frame goes from the connection's pending list (sent before the session was
ready), from the inbox (read before the relay began), or straight from the client's
reader (``ClientChannel.sink``, ``proxy/passthrough/relay.py``). The client sends
everything at once, so frames arrive before the session is ready, and an upstream
that reads nothing at first makes the sends wait (the reader stops, the client's
socket pushes back).

Down: an upstream frame is written to the client from the upstream socket's data
callback (``proxy/ws_direct.py``), or queued to the relay's task, which writes it at
once or through the client's bounded write queue. A burst of frames of mixed sizes
to a client that stops reading for a while takes all of these ways.

Every test runs with the direct paths of ``proxy/ws_direct.py`` on and off: the
results must be the same. Real sockets on loopback: the proxy in process and an
upstream that answers each event with its id.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from aiohttp import WSMsgType, web

from bench.echo_upstream import SESSION_CREATED
from proxy import client_io, client_made, client_outbox, ws_direct
from proxy.client_io import ClientChannel
from proxy.passthrough import relay
from tests.servers import connect, proxy, proxy_config, serve_app, ws_url

# The aiohttp whose internals the direct paths rest on (3.14.4 on: the parked parse,
# proxy/ws_raw.py): there the sockets must get them.
_BUILT_ON = re.fullmatch(r"3\.14\.([4-9]|\d\d+)", aiohttp.__version__) is not None


@pytest.fixture(params=[True, False], ids=["direct", "queued"])
def direct(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """The direct paths on or off; counts the frames that took them, each way (``made``,
    ``up_made``: frames relayed as they came, ``proxy/ws_raw.py``), and the sockets
    that got them (``tapped_up``: client sockets with a ``TapQueue``, ``tapped_down``:
    upstream ones, ``writer``: client sockets written without a coroutine). On an
    aiohttp whose internals differ the sockets keep aiohttp's own parts, and no frame
    takes a direct path."""
    monkeypatch.setattr(ws_direct, "ENABLED", request.param)
    counts = {"down": 0, "up": 0, "made": 0, "up_made": 0}
    counts.update(tapped_up=0, tapped_down=0, writer=0)

    def tapped(key: str) -> Callable[[Any], Any]:
        def tap_queue(ws: Any) -> Any:
            queue = ws_direct.tap_queue(ws)
            counts[key] += isinstance(queue, ws_direct.TapQueue)
            return queue

        return tap_queue

    def text_writer(ws: Any) -> Any:
        write = ws_direct.text_writer(ws)
        counts["writer"] += write is not None
        return write

    monkeypatch.setattr(client_io, "tap_queue", tapped("tapped_up"))
    monkeypatch.setattr(relay, "tap_queue", tapped("tapped_down"))
    monkeypatch.setattr(client_outbox, "text_writer", text_writer)
    write_now, take = ClientChannel.write_now, ClientChannel._take
    write_made = ClientChannel.write_frame_now

    def written(self: ClientChannel, text: str) -> bool:
        done = write_now(self, text)
        counts["down"] += done
        return done

    def written_made(self: ClientChannel, frame: bytes) -> bool:
        done = write_made(self, frame)
        counts["down"] += done
        counts["made"] += done
        return done

    def taken(self: ClientChannel, text: str) -> bool:
        done = take(self, text)
        counts["up"] += done
        return done

    def made_taker(channel: ClientChannel) -> object:
        take = client_made.made_taker(channel)

        def taken_made(frame: bytes, head: int) -> bool:
            assert take is not None
            done = take(frame, head)
            counts["up"] += done
            counts["up_made"] += done
            return done

        return taken_made

    monkeypatch.setattr(client_io, "made_taker", made_taker)
    monkeypatch.setattr(ClientChannel, "write_now", written)
    monkeypatch.setattr(ClientChannel, "write_frame_now", written_made)
    monkeypatch.setattr(ClientChannel, "_take", taken)
    return counts


@asynccontextmanager
async def echo_upstream(stall_s: float) -> AsyncIterator[str]:
    """Answers every event with its id, after reading nothing for ``stall_s``; a
    ``burst`` event with ``n`` frames numbered in order."""

    async def handler(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        await ws.send_json(SESSION_CREATED)
        await asyncio.sleep(stall_s)
        async for msg in ws:
            if msg.type != WSMsgType.TEXT:
                break
            event = json.loads(msg.data)
            if event.get("type") == "burst":
                for i in range(event["n"]):
                    pad = "x" * BURST_SIZES[i % len(BURST_SIZES)]
                    await ws.send_json({"type": "burst.item", "i": i, "pad": pad})
                continue
            await ws.send_json({"type": "echo", "id": event.get("event_id"), "n": event.get("n")})
        return ws

    app = web.Application()
    app.router.add_get("/v1/realtime", handler)
    async with serve_app(app) as base:
        yield base.replace("http://", "ws://") + "/v1/realtime"


# Small frames, some over the size written directly (ws_direct.DIRECT_MAX_BYTES), and
# one over the queue's limit (aiohttp parks the rest of that read, and parses it while
# the reader holds the big frame) followed by small ones.
BURST_SIZES = [10, 1500, 40_000, 200, 3000, 200_000, 10, 10]


async def test_frames_reach_the_upstream_in_order_once_each(direct: dict[str, int]) -> None:
    n = 200
    audio = "A" * 65536  # 2 s of audio a frame: the sockets' buffers fill during the stall
    routes = [{"model": "m", "upstream": "", "mode": "passthrough"}]
    async with echo_upstream(stall_s=0.5) as upstream:
        routes[0]["upstream"] = upstream
        config = proxy_config(
            {}, routes=routes, server={"pending_client_frames": 4, "input_realtime_factor": 1000}
        )
        async with proxy(config) as base, connect(ws_url(base, duplex="1")) as c:
            for i in range(n):  # at once: before the session is ready, and after
                await c.send(
                    {"type": "input_audio_buffer.append", "event_id": f"e{i}", "audio": audio}
                )
            created = await c.until("session.created")
            assert created["session"]["capabilities"]["proxy"]["mode"] == "passthrough"
            # An id repeated on the same connection is the client's own tag: it goes
            # up again, in order (only one from an earlier connection is dropped).
            resent = {"type": "input_audio_buffer.append", "event_id": f"e{n - 3}", "audio": audio}
            await c.send(resent)
            await c.send({"type": "input_audio_buffer.append", "event_id": "last", "audio": audio})
            seen: list[str] = []
            while not seen or seen[-1] != "last":
                event = await c.until("echo")
                if event["id"] is not None:  # (the proxy's own opening update has none)
                    seen.append(event["id"])
    assert seen == [f"e{i}" for i in range(n)] + [f"e{n - 3}", "last"]


async def test_upstream_frames_reach_the_client_in_order(direct: dict[str, int]) -> None:
    n = 300
    routes = [{"model": "m", "upstream": "", "mode": "passthrough"}]
    async with echo_upstream(stall_s=0) as upstream:
        routes[0]["upstream"] = upstream
        config = proxy_config({}, routes=routes, server={"input_realtime_factor": 1000})
        async with proxy(config) as base:
            async with connect(ws_url(base, duplex="1")) as c:
                await c.until("session.created")
                for _ in range(2):  # one burst read at once, one after a stall
                    await c.send({"type": "burst", "n": n})
                    got = [(await c.until("burst.item"))["i"] for _ in range(n // 3)]
                    await asyncio.sleep(0.3)  # the client stops reading: frames queue
                    got += [(await c.until("burst.item"))["i"] for _ in range(n - n // 3)]
                    assert got == list(range(n))
                # Small frames up (written from the client socket's callback when on),
                # and each fifth one over the queue's limit, a small one right behind it.
                ids = [f"s{i}" for i in range(50)]
                for n, i in enumerate(ids):
                    audio = "A" * (200_000 if n % 5 == 4 else 0)
                    ev = {"type": "input_audio_buffer.append", "event_id": i, "audio": audio}
                    await c.send(ev)
                assert [(await c.until("echo"))["id"] for _ in ids] == ids  # nothing in between
    # The direct paths were taken when the sockets had them (and only then).
    if ws_direct.ENABLED and _BUILT_ON:
        assert direct["tapped_up"] and direct["tapped_down"] and direct["writer"]
    assert bool(direct["down"]) is bool(direct["writer"])
    assert bool(direct["made"]) is bool(direct["tapped_down"] and direct["writer"])
    assert bool(direct["up"]) is bool(direct["tapped_up"])
    assert bool(direct["up_made"]) is bool(direct["tapped_up"])


async def test_bad_frames_get_their_errors_and_the_rest_go_up(direct: dict[str, int]) -> None:
    """Between appends that go up (with no id, a null one, a new one, one repeated on
    the connection), every frame the client's checks refuse gets its coded error, whichever
    way the frames are taken (the checks' own equivalence: tests/test_client_frame_checks.py)."""
    routes = [{"model": "m", "upstream": "", "mode": "passthrough"}]
    audio = "AAAA" * 320
    # In vLLM-Omni's words (a native client's, ``BadFrame.native``) but for the proxy's limits.
    not_event = ("bad_event", "Duplex event must be a JSON object with a type")
    bad = {
        '{"type":': ("invalid_json", "Invalid JSON event"),
        '{"type":"t","v":' + '{"a":' * 8 + "1" + "}" * 8 + "}": (
            "invalid_event",
            "event nested too deeply",
        ),
        '{"type":"t","v":[' + ",".join(["1"] * 1001) + "]}": (
            "invalid_event",
            "event holds too many JSON values",
        ),
        '["input_audio_buffer.append"]': not_event,
        '"{"': not_event,
        '{"type":"","audio":"AAAA"}': not_event,
        '{"type":5,"audio":"AAAA"}': not_event,
        # Over the caps of the fields a session keeps (``proxy/client_fields.py``).
        '{"type":"input_audio_buffer.append","event_id":"' + "i" * 17 + '","audio":"AAAA"}': (
            "invalid_event",
            "Invalid 'event_id': string too long",
        ),
        '{"type":"session.update","session":{"instructions":"' + "x" * 1025 + '"}}': (
            "invalid_value",
            "Invalid 'session.instructions': string too long",
        ),
    }
    async with echo_upstream(stall_s=0) as upstream:
        routes[0]["upstream"] = upstream
        server = {
            "input_realtime_factor": 1000,
            "max_json_depth": 8,
            "max_json_values": 1000,
            "max_event_id_chars": 16,
            "max_instructions_chars": 1024,
        }
        config = proxy_config({}, routes=routes, server=server)
        async with proxy(config) as base, connect(ws_url(base, duplex="1")) as c:
            await c.until("session.created")

            async def echoed() -> object:  # the next echo of the client's own
                while (n := (await c.until("echo"))["n"]) is None:
                    pass  # the proxy's opening update
                return n

            echoes, errors = [], []
            for i, raw in enumerate(bad):  # one at a time: the reader waits idle for each
                await c.ws.send_str(
                    f'{{"type":"input_audio_buffer.append","n":{i},"audio":"{audio}"}}'
                )
                echoes.append(await echoed())
                await c.ws.send_str(raw)
                error = (await c.until("error"))["error"]
                errors.append((error["code"], error["message"][: len(bad[raw][1])]))
            append = {"type": "input_audio_buffer.append", "audio": audio}
            for n, event_id in [
                ("null", None),
                ("once", "once"),
                ("again", "once"),
                ("end", "end"),
            ]:
                await c.send({**append, "event_id": event_id, "n": n})
                echoes.append(await echoed())
    assert bool(direct["up"]) is bool(direct["tapped_up"])  # the appends took it when they could
    assert bool(direct["up_made"]) is bool(direct["tapped_up"])
    assert echoes == [*range(len(bad)), "null", "once", "again", "end"]
    assert errors == list(bad.values())
