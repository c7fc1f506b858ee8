"""A socket's heartbeat without a callback per chunk it reads.

aiohttp's heartbeat (``heartbeat=`` on a socket) moves its ping back on every chunk
the socket reads: a ``call_soon`` and a timer reset per chunk, which on a relayed
audio stream (a chunk every 20 ms each way) was a measurable share of a frame's cost
(``bench/relay.py``). ``Heartbeat`` keeps what it promises with less: each chunk only
sets a flag (``received``), and a timer every ``every_s`` looks at it. A socket that
sent something since the last look is not pinged; one that sent nothing is pinged,
and if nothing (not even the pong) arrives within half of ``every_s`` it is closed
as aiohttp closes it (close code 1006; a reader waiting on it gets an ERROR).

So a silent peer is pinged ``every_s`` to twice that after its last frame (aiohttp:
``every_s``), and a dead one is found within 2.5 times ``every_s``.

``take_over`` swaps a just-opened socket's aiohttp heartbeat for one of these. It
rests on aiohttp 3.14's internals, checked first: when anything differs the socket
keeps aiohttp's own heartbeat, which behaves the same, only at a cost per chunk.
The socket's class must stop it when aiohttp stops its own (``_cancel_heartbeat``:
``proxy/ws_direct.py``'s response classes do).
"""

from __future__ import annotations

import asyncio
from typing import Any

# Tests turn it off to compare with aiohttp's own heartbeat.
ENABLED = True


class Heartbeat:
    __slots__ = ("_every", "_handle", "_loop", "_ping", "_ws", "live")

    def __init__(self, ws: Any, every_s: float, loop: asyncio.AbstractEventLoop) -> None:
        self._ws = ws
        self._every = every_s
        self._loop = loop
        self._ping: asyncio.Task[None] | None = None
        self.live = False  # something arrived since the last look
        self._handle: asyncio.TimerHandle | None = loop.call_later(every_s, self._look)

    def received(self) -> None:
        """The socket's protocol read a chunk (its ``data_received_cb``)."""
        self.live = True

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self._ping is not None:
            self._ping.cancel()
            self._ping = None

    def _look(self) -> None:
        """Every ``every_s``: ping a socket that sent nothing since the last look."""
        if self.live:
            self.live = False
            self._handle = self._loop.call_later(self._every, self._look)
            return
        self._handle = self._loop.call_later(self._every / 2, self._pong_due)
        ping = self._loop.create_task(self._ws.ping())
        self._ping = ping
        ping.add_done_callback(self._pinged)

    def _pinged(self, task: asyncio.Task[None]) -> None:
        if self._ping is task:
            self._ping = None
        if not task.cancelled() and (exc := task.exception()) is not None:
            self.stop()
            self._ws._handle_ping_pong_exception(exc)  # as aiohttp: the socket is lost

    def _pong_due(self) -> None:
        """Half of ``every_s`` after a ping: anything since (the pong, a frame) or lost."""
        if self.live:
            self.live = False
            self._handle = self._loop.call_later(self._every, self._look)
            return
        self._handle = None
        self._ws._pong_not_received()  # aiohttp's own verdict: closed, 1006, ERROR to a reader


def take_over(ws: Any, proto: Any) -> Heartbeat | None:
    """Replace the aiohttp heartbeat of ``ws`` (just opened, its parser set on
    ``proto``) with a ``Heartbeat``; None, and no change, when it has none or
    anything differs."""
    every = getattr(ws, "_heartbeat", None)
    loop = getattr(ws, "_loop", None)
    if (
        not ENABLED
        or not isinstance(every, (int, float))
        or every <= 0
        or loop is None
        or getattr(proto, "_data_received_cb", None) != getattr(ws, "_on_data_received", 0)
        or not callable(getattr(ws, "_cancel_heartbeat", None))
        or not callable(getattr(ws, "_pong_not_received", None))
        or not callable(getattr(ws, "_handle_ping_pong_exception", None))
        or not isinstance(getattr(ws, "_pong_heartbeat", None), (int, float))
        or getattr(ws, "closed", True)
    ):
        return None
    ws._cancel_heartbeat()  # aiohttp's timers; with no heartbeat, it sets none again
    ws._heartbeat = None
    beat = Heartbeat(ws, float(every), loop)
    proto._data_received_cb = beat.received
    return beat
