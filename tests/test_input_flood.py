"""A client streaming audio faster than real time, against a proxy in its own process:
it is slowed (its socket pushes back), told ``input_rate_exceeded``, then closed with
1008; a second session on the same proxy keeps answering, and the proxy's memory
stays bounded (docs/protocol.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pybase64
import pytest

from proxy.reference.options import ReferenceOptions
from tests.cli_processes import Procs, procs
from tests.flood_stack import rss_mb, served
from tests.servers import Client, connect, reference, silence, ws_url

__all__ = ["procs"]  # the fixture, used by name

RSS_BOUND_MB = 300  # generous: unbounded queues grew by gigabytes within seconds


async def flood(c: Client, stop: asyncio.Event) -> None:
    """100 ms appends, as fast as the socket takes them."""
    chunk = pybase64.b64encode(silence(100)).decode()
    event = '{"type":"input_audio_buffer.append","audio":"' + chunk + '"}'
    while not stop.is_set():
        try:
            await c.ws.send_str(event)
        except (ConnectionResetError, aiohttp.ClientError, RuntimeError):
            return


async def answers(c: Client, stop: asyncio.Event) -> int:
    """session.update round trips on a second session until ``stop``."""
    n = 0
    while not stop.is_set():
        await c.send({"type": "session.update", "session": {"instructions": f"n{n}"}})
        await c.until("session.updated", timeout=10)
        n += 1
        await asyncio.sleep(0.1)
    return n


@pytest.mark.parametrize("kind", ["turn", "duplex-no-barge-in"])
async def test_a_flooding_client_is_slowed_warned_and_closed_and_others_never_notice(
    procs: Procs, tmp_path: Path, kind: str
) -> None:
    # Two sessions at once on one server: it is configured for them, as a real one is.
    async with reference(kind, reply_ms=600, options=ReferenceOptions(max_sessions=2)) as upstream:
        server = "input_burst_s = 2.0\ninput_rate_grace_s = 3.0\n"
        proc, base = await served(procs, tmp_path, server, upstream)
        pid = proc.popen.pid
        async with connect(ws_url(base)) as calm, connect(ws_url(base)) as fast:
            await calm.until("session.created")
            await fast.until("session.created")
            before = rss_mb(pid)
            peak = before
            stop = asyncio.Event()
            sender = asyncio.create_task(flood(fast, stop))
            answering = asyncio.create_task(answers(calm, stop))
            try:
                async with asyncio.timeout(30):
                    err = await fast.until("error")
                    assert err["error"]["code"] == "input_rate_exceeded"
                    while True:
                        try:
                            msg = await fast.ws.receive(timeout=0.5)
                        except TimeoutError:
                            continue
                        finally:
                            peak = max(peak, rss_mb(pid))
                        if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
                            break
                assert fast.ws.close_code == 1008
            finally:
                stop.set()
                sender.cancel()
            assert await answering >= 3, "the calm session kept answering throughout"
            await calm.send({"type": "session.update", "session": {"instructions": "after"}})
            await calm.until("session.updated")
            peak = max(peak, rss_mb(pid))
            assert peak - before < RSS_BOUND_MB, (before, peak)
        proc.check_alive()
