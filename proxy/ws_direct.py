"""Frames moved without a task hop. With ``proxy/ws_raw.py``, ``proxy/ws_write.py``,
``proxy/client_made.py`` and ``proxy/ws_heartbeat.py``, one of the modules that
touch aiohttp's internals.

Per frame, aiohttp parses the socket's bytes into a queue (``WebSocketDataQueue``),
wakes the task that reads it, and writes with a coroutine. The passthrough relay
(``proxy/passthrough/relay.py``) can do better with two hooks:

* ``install_tap`` (upstream sockets) and ``ClientResponse`` (client sockets): the
  socket's queue is replaced, before it is used, by a ``TapQueue``, whose ``tap``
  (when set) may take a text frame inside the socket's data callback instead of
  queueing it;
* ``text_writer``: a text frame written at once, without a coroutine
  (``proxy/ws_write.py``).

Both rest on aiohttp 3.14's internals. What they use is checked when a socket is set
up; when anything differs, or ``ENABLED`` is False, the socket keeps aiohttp's queue
(``tap_queue`` gives a ``NoTap``), ``text_writer`` gives None, and the relay takes
its queued path, which behaves the same, only slower
(``tests/test_passthrough_order.py`` runs both).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.web_request import BaseRequest

from proxy.client_limits import READ_CAP_FACTOR
from proxy.ws_heartbeat import Heartbeat, take_over
from proxy.ws_raw import RawSplit, RawTap
from proxy.ws_write import frame_writer, made_frame_writer, masking_writer

try:  # private modules: their absence only turns the direct paths off
    from aiohttp._websocket import reader as _reader
    from aiohttp._websocket import writer as _writer
except ImportError:  # pragma: no cover - another aiohttp
    _reader = _writer = None  # type: ignore[assignment]

_Queue: Any = getattr(_reader, "WebSocketDataQueue", None)
_Parser: Any = getattr(_reader, "WebSocketReader", None)
_Writer: Any = getattr(_writer, "WebSocketWriter", None)

# Tests turn the direct paths off to show that both paths behave the same.
ENABLED = True
TEXT = aiohttp.WSMsgType.TEXT
Tap = Callable[[str], bool]

# The direct paths (``ClientChannel.send_now``, the passthrough relay, upstream sends)
# write a frame up to this size without a timer: into an empty socket buffer it stays
# under aiohttp's high-water mark, so the write never waits.
DIRECT_MAX_BYTES = 32 * 1024
# A text of at most this many characters fits whatever they are (4 bytes of UTF-8 at
# most each): callers on a frame's path test it before calling ``fits_direct``.
DIRECT_ANY_TEXT = DIRECT_MAX_BYTES // 4


def fits_direct(text: str) -> bool:
    """At most ``DIRECT_MAX_BYTES`` once encoded: a character is up to 4 bytes of UTF-8,
    so a longer frame fits only if it is ASCII (a flag CPython keeps: no scan)."""
    n = len(text)
    return n <= DIRECT_ANY_TEXT or (n <= DIRECT_MAX_BYTES and text.isascii())


class _NoQueue:
    def __init__(self, *args: Any, **kwargs: Any) -> None:  # pragma: no cover
        raise TypeError("no WebSocketDataQueue in this aiohttp")


class TapQueue(_Queue or _NoQueue):  # type: ignore[misc]
    """A socket's message queue whose ``tap`` may take a text frame before it is
    queued (it returns True if it did).

    ``WebSocketDataQueue.feed_data`` is a Cython ``cpdef`` method, so the parser
    calls this override. The tap is offered a frame only when nothing is queued
    before it, and a frame it does not take disarms it until the reader re-arms it
    (after that frame is in the reader's hands): aiohttp may parse the next frame
    while the reader holds one it has just taken from the queue (a read parked over
    the queue's limit resumes then), so an empty queue alone does not mean nothing
    is ahead. For the same reason ``arm`` arms the taps only while nothing is queued
    and no parse is parked: the read that takes a queued frame resumes the parked
    parse before it returns that frame, so a frame parsed then would meet an empty
    queue. So the frames keep their order whichever way each one goes.

    ``raw``, armed with ``tap``, may take whole frames before they are parsed
    (``proxy/ws_raw.py``)."""

    tap: Tap | None = None
    raw: RawTap | None = None

    def arm(self, tap: Tap | None, raw: RawTap | None) -> None:
        """Set the taps for the reader's next read, if nothing is ahead of the frames
        it would offer them (else leave them off: this read takes the queued path)."""
        if self._buffer or self._stalled_reader is not None:
            self.tap = self.raw = None
        else:
            self.tap, self.raw = tap, raw

    def feed_data(self, data: Any, size: int) -> None:
        tap = self.tap
        if tap is not None and data[0] is TEXT and not self._buffer:
            try:
                if tap(data[1]):
                    return
            except Exception:  # never into the parser: queue the frame instead
                pass
        self.tap = None
        super().feed_data(data, size)


class UpstreamResponse(aiohttp.ClientWebSocketResponse):
    """The upstream sockets' response class (``aiohttp.ClientSession(ws_response_class=)``):
    it keeps the bytes that came with the handshake, which the parser aiohttp sets up
    next reads at once, so that ``install_tap``'s parser can read them again."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        tail = getattr(getattr(getattr(self, "_conn", None), "protocol", None), "_tail", None)
        self.early: bytes | None = tail if type(tail) is bytes else None

    beat: Heartbeat | None = None  # set by install_tap (proxy/ws_heartbeat.py)

    def _cancel_heartbeat(self) -> None:
        super()._cancel_heartbeat()
        if self.beat is not None:
            self.beat.stop()


def install_tap(ws: aiohttp.ClientWebSocketResponse, max_msg_size: int) -> None:
    """Give a just-opened upstream socket a ``TapQueue`` and a new parser, and its
    heartbeat a ``Heartbeat``; no change when anything differs. Call it before any
    await: the old parser has then read only the handshake's extra bytes, which the
    new one reads again."""
    if not isinstance(ws, UpstreamResponse):
        return
    _install_tap(ws, max_msg_size)
    ws.beat = take_over(ws, getattr(getattr(ws, "_conn", None), "protocol", None))


def _install_tap(ws: UpstreamResponse, max_msg_size: int) -> None:
    if not ENABLED or _Queue is None or _Parser is None:
        return
    early = ws.early
    if early is None:
        return
    old: Any = getattr(ws, "_reader", None)
    proto: Any = getattr(getattr(ws, "_conn", None), "protocol", None)
    limit = getattr(old, "_limit", 0) // 2  # (the queue keeps twice the limit it is given)
    if (
        type(old) is not _Queue
        or old.is_eof()
        or old.exception() is not None
        or getattr(ws, "_compress", None) != 0
        or getattr(ws, "_parser", None) is None
        or getattr(proto, "_payload_parser", None) is not ws._parser
        or getattr(proto, "_payload", None) is not old
        or not hasattr(old, "_stalled_reader")  # (aiohttp 3.14.4 on: proxy/ws_raw.py)
        or not hasattr(proto, "_data_received_cb")
        or not callable(getattr(proto, "set_parser", None))
        or getattr(proto, "_tail", None) != b""
        or getattr(proto, "_reading_paused", True)
        or limit <= 0
    ):
        return
    queue = TapQueue(proto, limit, loop=ws._loop)
    parser = _Parser(queue, max_msg_size, compress=False, decode_text=True)
    ws._reader = queue
    ws._parser = parser
    ws.early = None
    # set_parser feeds the new parser what the protocol holds as its tail: the same
    # bytes, so the new queue holds what the old one did.
    proto._tail = early
    split = RawSplit(parser, queue, masked=False)
    proto.set_parser(split, queue, data_received_cb=proto._data_received_cb)


class ClientResponse(web.WebSocketResponse):
    """The client sockets' response class: prepared, its queue is a ``TapQueue`` and
    its heartbeat a ``Heartbeat``."""

    beat: Heartbeat | None = None

    def _cancel_heartbeat(self) -> None:
        super()._cancel_heartbeat()
        if self.beat is not None:
            self.beat.stop()

    async def close(self, *, code: int = 1000, message: bytes = b"", drain: bool = True) -> bool:
        if code == 1009 and not message:  # aiohttp refused a frame over the limit itself
            message = f"frame over {self._max_msg_size // READ_CAP_FACTOR} bytes".encode()
        return await super().close(code=code, message=message, drain=drain)

    def _post_start(self, request: BaseRequest, protocol: str | None, writer: Any) -> None:
        proto: Any = getattr(request, "_protocol", None)
        early = getattr(proto, "_message_tail", None)  # what the new parser reads first
        super()._post_start(request, protocol, writer)
        if ENABLED and _Queue is not None and _Parser is not None and type(early) is bytes:
            _tap_client(self, proto, early)
        self.beat = take_over(self, proto)


def _tap_client(ws: Any, proto: Any, early: bytes) -> None:
    """As ``install_tap``, for a server socket just set up (nothing awaited since)."""
    old: Any = getattr(ws, "_reader", None)
    limit = getattr(old, "_limit", 0) // 2
    if (
        type(old) is not _Queue
        or old.is_eof()
        or old.exception() is not None
        or not hasattr(old, "_stalled_reader")  # (aiohttp 3.14.4 on: proxy/ws_raw.py)
        or getattr(proto, "_payload_parser", None) is not getattr(ws, "_parser", None)
        or getattr(proto, "_message_tail", None) != b""
        or getattr(proto, "_reading_paused", True)
        or getattr(ws, "_decode_text", None) is not True
        or not isinstance(getattr(ws, "_max_msg_size", None), int)
        or limit <= 0
    ):
        return
    queue = TapQueue(old._protocol, limit, loop=ws._loop)
    parser = _Parser(queue, ws._max_msg_size, compress=bool(ws._compress), decode_text=True)
    ws._reader = queue
    ws._parser = parser
    proto._payload_parser = split = RawSplit(parser, queue, masked=True)
    if early:
        split.feed_data(early)


class NoTap:
    """What ``tap_queue`` gives for a socket without a ``TapQueue``: a tap set on
    it is never called (every frame takes the queued path)."""

    tap: Tap | None = None
    raw: RawTap | None = None

    def arm(self, tap: Tap | None, raw: RawTap | None) -> None:
        """Nothing to arm."""


def tap_queue(ws: aiohttp.ClientWebSocketResponse | web.WebSocketResponse) -> Any:
    """The socket's ``TapQueue``, or a ``NoTap``."""
    queue = getattr(ws, "_reader", None)
    if ENABLED and _Queue is not None and isinstance(queue, TapQueue):
        return queue
    return NoTap()


def text_writer(
    ws: web.WebSocketResponse | aiohttp.ClientWebSocketResponse,
) -> Callable[[str], bool] | None:
    """Write a text frame on an open socket at once, no coroutine (True if written;
    False: not written, send it the usual way). None when not available
    (``proxy/ws_write.py``), or turned off."""
    return frame_writer(ws) if ENABLED else None


def made_writer(ws: web.WebSocketResponse) -> Callable[[bytes], bool] | None:
    """``text_writer`` for whole frames already made (``proxy/ws_write.py``)."""
    return made_frame_writer(ws) if ENABLED else None


def payload_writer(ws: aiohttp.ClientWebSocketResponse) -> Callable[[bytearray], bool] | None:
    """``text_writer`` for a text frame's payload in bytes, masked in place."""
    return masking_writer(ws) if ENABLED else None


def write_buffered(ws: aiohttp.ClientWebSocketResponse) -> int:
    """Bytes waiting in a socket's write buffer (-1: unknown, so the sender assumes
    it may have to wait)."""
    return buffer_size(ws)()


def buffer_size(ws: aiohttp.ClientWebSocketResponse) -> Callable[[], int]:
    """``write_buffered`` of one socket, looked up once: its transport's own method
    (aiohttp keeps the transport on the socket's writer; uvloop's transports are not
    ``asyncio.WriteTransport`` instances, so the method is asked for, not the class),
    or one that says -1."""
    transport = getattr(getattr(ws, "_writer", None), "transport", None)
    size = getattr(transport, "get_write_buffer_size", None)
    if not callable(size) or not isinstance(size(), int):
        return _unknown
    return size  # type: ignore[no-any-return]


def _unknown() -> int:
    return -1
