"""The producers of an emulated session's inputs besides the upstream socket and
the clock (``ticker.py``): the client's attachment and frames, and the VAD."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable

from proxy.client_frames import ClientFrame
from proxy.client_io import CLOSED, ClientChannel
from proxy.client_queue import FrameCredits
from proxy.clock import now_ms
from proxy.emulated.queue_items import Attach, Detached, Execute, Failed, FromClient
from proxy.vad import VadRunner
from shim.actions import Action, AnalyzeAudio
from shim.inputs import VadWindow


class ClientFeed:
    """Moves one attachment's client frames onto the session's queue, one credit
    each. Once the frames read before it are in, the client's reader hands each frame
    over itself (``ClientChannel.sink``): from the socket's data callback when a
    credit is free (``sink_now``: no task woken but the session's), else from the
    reader's task, which waits for a credit (the session is behind: the socket is
    not read and pushes back). Either way in the order read: the callback takes a
    frame only while the reader holds none (``proxy/ws_direct.py``)."""

    def __init__(
        self,
        client: ClientChannel,
        inputs: asyncio.Queue[object],
        credits: FrameCredits,
        offer: Callable[[FromClient], Awaitable[bool]],
    ) -> None:
        self.client, self.inputs, self.credits, self.offer = client, inputs, credits, offer
        self.settled = asyncio.Event()  # clear while a frame is being handed over
        self.settled.set()

    async def run(self) -> None:
        client = self.client
        try:
            while not client.inbox.empty():  # read before the hand-over, in order
                if not await self._from_inbox(client.inbox.get_nowait(), inline=True):
                    return
            client.sink, client.sink_now = self.sink, (self.ready, self.take)
            # The reader puts nothing more here but its CLOSED, after its last frame.
            while await self._from_inbox(await client.inbox.get(), inline=False):
                pass
        finally:
            client.sink = client.sink_now = None

    async def _from_inbox(self, item: object, inline: bool) -> bool:
        if item is CLOSED:
            await self.inputs.put(Detached(self.client))
            return False
        assert isinstance(item, ClientFrame)
        if inline:  # handled at once if the session is idle (session_loop.py)
            self.settled.clear()
            try:
                if await self.offer(FromClient(self.client, item)):
                    return True
            finally:
                self.settled.set()
        await self.sink(item)
        return True

    async def sink(self, frame: ClientFrame) -> None:
        await self.credits.acquire(len(frame.raw))
        self.inputs.put_nowait(FromClient(self.client, frame, credited=True))

    def ready(self, text: str) -> bool:
        return self.credits.has_room()

    def take(self, frame: ClientFrame) -> None:
        self.credits.take(len(frame.raw))
        self.inputs.put_nowait(FromClient(self.client, frame, credited=True))


async def feed_attachment(
    inputs: asyncio.Queue[object],
    credits: FrameCredits,
    offer: Callable[[FromClient], Awaitable[bool]],
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
    feed = ClientFeed(attach.client, inputs, credits, offer)
    reader = asyncio.create_task(feed.run(), name="feed-client")
    try:
        await attach.done.wait()
        # A frame being handled right now is finished first: cancelling its task
        # would cut its actions short (stop() cancels it itself when the session ends).
        await feed.settled.wait()
    finally:
        reader.cancel()
        # Waits for its end, not its result: a cancellation of this task meanwhile
        # stays this task's (awaiting the reader would raise the reader's own, and
        # suppressing that would swallow it).
        await asyncio.wait({reader})
        if not reader.cancelled() and reader.exception() is not None:
            await reader  # its failure, raised


# Audio chunks waiting for the VAD before the session's loop waits for them (~5 s of
# 20 ms appends): if the VAD falls behind, the loop waits, and so does the client.
VAD_BACKLOG = 256


class VadFeed:
    """The session's audio into the shared VAD; each window's probability lands on
    the session's queue as a ``VadWindow`` the moment its batch ends: no task of its
    own, no future per window."""

    def __init__(self, vad: VadRunner, inputs: asyncio.Queue[object]) -> None:
        self.vad, self.inputs = vad, inputs
        self.stream = vad.new_stream()
        self._chunks: deque[int] = deque()  # the last window's end of each chunk waiting
        self._room = asyncio.Event()  # set while fewer than VAD_BACKLOG chunks wait
        self._room.set()
        self._failed = False

    async def analyze(self, job: AnalyzeAudio) -> None:
        await self._room.wait()
        if self.vad.submit(self.stream, job.samples, self._deliver, self._fail):
            self._chunks.append(self.stream.fed)
            if len(self._chunks) >= VAD_BACKLOG:
                self._room.clear()

    def _deliver(self, prob: float, end_sample: int) -> None:
        self.inputs.put_nowait(VadWindow(prob, end_sample, now_ms()))
        while self._chunks and self._chunks[0] <= end_sample:
            self._chunks.popleft()
        if len(self._chunks) < VAD_BACKLOG:
            self._room.set()

    def _fail(self, error: Exception) -> None:
        """The VAD could not run this session's audio: without it the session cannot
        take turns, so it ends (``internal_error``) rather than go on deaf."""
        if not self._failed:
            self._failed = True
            self.inputs.put_nowait(Failed(error))

    def close(self) -> None:
        """The session ended: its windows still waiting are dropped, not run."""
        self.stream.reset()
        self._chunks.clear()
        self._room.set()
