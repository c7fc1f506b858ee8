"""The producers of an emulated session's inputs besides the upstream socket and
the clock (``ticker.py``): the client's attachment and frames, and the VAD."""

from __future__ import annotations

import asyncio
import contextlib

from proxy.client_frames import ClientFrame
from proxy.client_io import CLOSED, ClientChannel
from proxy.clock import now_ms
from proxy.emulated.queue_items import Attach, Detached, Execute, FromClient
from proxy.vad import VadRunner
from shim.actions import Action, AnalyzeAudio
from shim.inputs import VadWindow


async def feed_client(
    client: ClientChannel, inputs: asyncio.Queue[object], credits: asyncio.Semaphore
) -> None:
    """Move the client's frames onto the session queue, one credit each: with none
    left (the session is behind), the client's inbox fills and its reading stops."""
    while True:
        item = await client.inbox.get()
        if item is CLOSED:
            await inputs.put(Detached(client))
            return
        assert isinstance(item, ClientFrame)
        await credits.acquire()
        await inputs.put(FromClient(client, item, credited=True))


async def feed_attachment(
    inputs: asyncio.Queue[object],
    credits: asyncio.Semaphore,
    attach: Attach,
    pending: list[ClientFrame],
    after: list[Action],
) -> None:
    """Queue a client's attachment and feed its frames until the attachment ends.

    ``after`` runs right after the attach (a restore's closing events); ``pending``
    are frames the client sent before the session was ready, applied next in order.
    """
    await inputs.put(attach)
    if after:
        await inputs.put(Execute(after))
    for frame in pending:
        await inputs.put(FromClient(attach.client, frame))
    reader = asyncio.create_task(feed_client(attach.client, inputs, credits), name="feed-client")
    try:
        await attach.done.wait()
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader


async def analyze_audio(
    vad: VadRunner, jobs: asyncio.Queue[AnalyzeAudio], inputs: asyncio.Queue[object]
) -> None:
    """Run the session's audio through the shared VAD; each window's result is an input."""
    stream = vad.new_stream()
    while True:
        job = await jobs.get()
        results = await vad.process(stream, job.samples)
        now = now_ms()
        for prob, end in results:
            await inputs.put(VadWindow(prob, end, now))
