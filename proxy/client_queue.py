"""Where a client's frames wait before they are handled, bounded in frames and bytes.

A frame may be as big as ``server.max_frame_bytes``, so a bound in frames alone lets
one client park hundreds of megabytes: while its upstream warms up (the handshake's
inbox holds ``pending_client_frames``) or while its session is behind (its queue holds
``session_queue_frames``). Both also stop at ``pending_client_bytes``; past them the
client is not read and its socket pushes back (docs/protocol.md). One frame always
fits, so a frame up to ``max_frame_bytes`` never waits forever. A session's upstream
events wait the same way (``upstream_queue_bytes``): an upstream sending faster than
the session handles is not read.
"""

from __future__ import annotations

import asyncio

from proxy.client_frames import ClientFrame


def frame_bytes(item: object) -> int:
    return len(item.raw) if isinstance(item, ClientFrame) else 0


class FrameInbox(asyncio.Queue[object]):
    """The client's inbox: ``put`` waits while ``maxsize`` frames or ``max_bytes`` of
    frame text are held (sentinels count as frames of no size)."""

    def __init__(self, maxsize: int, max_bytes: int) -> None:
        super().__init__(maxsize)
        self.max_bytes = max_bytes
        self.held_bytes = 0

    def full(self) -> bool:
        return super().full() or self.held_bytes >= self.max_bytes

    def _put(self, item: object) -> None:
        self.held_bytes += frame_bytes(item)
        super()._put(item)

    def _get(self) -> object:
        item = super()._get()
        self.held_bytes -= frame_bytes(item)
        return item


class FrameCredits:
    """A session's room for frames on its queue: ``frames`` of them and ``max_bytes``
    of their text; ``acquire`` waits for room (``take`` takes it at once where no
    task may wait: a socket's data callback), ``release`` gives it back once the
    frame was handled. Client frames take it (``proxy/emulated/feeders.py``), and so
    do upstream events (``proxy/emulated/upstream_control.py``): past it that socket
    is not read and pushes back."""

    def __init__(self, max_bytes: int, frames: int = 1 << 62) -> None:
        self.free, self.max_bytes = frames, max_bytes
        self.held_bytes = 0
        self._room = asyncio.Event()
        self._room.set()

    async def acquire(self, n_bytes: int) -> None:
        while self.free <= 0 or self.held_bytes >= self.max_bytes:
            self._room.clear()
            await self._room.wait()
        self.free -= 1
        self.held_bytes += n_bytes

    def has_room(self) -> bool:
        """Whether ``acquire`` would return at once."""
        return self.free > 0 and self.held_bytes < self.max_bytes

    def take(self, n_bytes: int) -> None:
        """``acquire`` without the wait, when ``has_room`` said so."""
        self.free -= 1
        self.held_bytes += n_bytes

    def release(self, n_bytes: int) -> None:
        self.free += 1
        self.held_bytes -= n_bytes
        self._room.set()
