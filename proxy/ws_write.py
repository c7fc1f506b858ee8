"""A text frame written to a socket at once: the direct writes' frame writer.

It rests on aiohttp 3.14's writer (``aiohttp._websocket.writer.WebSocketWriter``):
``frame_writer`` checks what it uses and gives None when anything differs; callers
then send the usual way (``proxy/ws_direct.py``'s ``text_writer``).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import aiohttp
from aiohttp import web

try:  # private modules: their absence only turns the direct writes off
    from aiohttp._websocket import helpers as _helpers
    from aiohttp._websocket import writer as _writer
except ImportError:  # pragma: no cover - another aiohttp
    _helpers = _writer = None  # type: ignore[assignment]

_Writer: Any = getattr(_writer, "WebSocketWriter", None)
_mask: Any = getattr(_helpers, "websocket_mask", None)  # XORs a bytearray in place
# A text frame's header (RFC 6455 5.2): FIN and the opcode, then the length in 7
# bits, or 126 and 16 bits, or 127 and 64 bits; the top bit of the second byte says a
# 4-byte mask follows (a client's frames are masked, a server's are not).
_PACK_LEN1 = struct.Struct("!BB").pack
_PACK_LEN2 = struct.Struct("!BBH").pack
_PACK_LEN3 = struct.Struct("!BBQ").pack
_PACK_RANDBITS = struct.Struct("!L").pack


def _known_writer(ws: web.WebSocketResponse | aiohttp.ClientWebSocketResponse) -> Any:
    """The socket's aiohttp writer, if it is the one this knows and does not compress."""
    writer: Any = getattr(ws, "_writer", None)
    transport: Any = getattr(writer, "transport", None)
    if (
        _Writer is None
        or _mask is None
        or type(writer) is not _Writer
        or writer.compress
        or not isinstance(getattr(writer, "_closing", None), bool)
        or not isinstance(getattr(writer, "use_mask", None), bool)
        or not callable(getattr(writer, "get_random_bits", None))
        or not callable(getattr(transport, "write", None))
        or not callable(getattr(transport, "is_closing", None))
    ):
        return None
    return writer


def made_frame_writer(ws: web.WebSocketResponse) -> Callable[[bytes], bool] | None:
    """A writer of whole unmasked frames as they are (a server socket's: frames an
    upstream sent, ``proxy/ws_raw.py``), with ``frame_writer``'s checks; None where
    ``frame_writer`` would be, or on a socket that masks."""
    writer = _known_writer(ws)
    if writer is None or writer.use_mask:
        return None
    write, closing = writer.transport.write, writer.transport.is_closing

    def write_frame(frame: bytes) -> bool:
        if writer._closing or closing():
            return False
        try:
            write(frame)
        except (ConnectionError, RuntimeError, aiohttp.ClientError):
            return False
        return True

    return write_frame


def frame_writer(
    ws: web.WebSocketResponse | aiohttp.ClientWebSocketResponse,
) -> Callable[[str], bool] | None:
    """A text frame writer for an open socket: written at once, no coroutine (True if
    written; False: not written, send it the usual way). None when aiohttp's writer is
    not the one this knows, or compresses.

    The frame is built here, as aiohttp's writer builds an uncompressed one (its
    ``_write_websocket_frame``: the header, and on an upstream socket a fresh random
    mask from the writer's own source), and goes out in one transport write, with
    none of the writer's bookkeeping per frame: its output count only decides when
    its own sends wait for the transport to drain, and a direct write is made only
    into an empty buffer (``proxy/ws_direct.py``'s ``DIRECT_MAX_BYTES``)."""
    writer = _known_writer(ws)
    if writer is None:
        return None
    write, closing = writer.transport.write, writer.transport.is_closing
    if not writer.use_mask:  # a server socket: the client's

        def write_plain(text: str) -> bool:
            if writer._closing or closing():  # what send_frame and the frame writer check
                return False
            data = text.encode()
            n = len(data)
            try:
                if n < 126:
                    write(_PACK_LEN1(0x81, n) + data)  # FIN, text
                elif n < 65536:
                    write(_PACK_LEN2(0x81, 126, n) + data)
                else:
                    write(_PACK_LEN3(0x81, 127, n) + data)
            except (ConnectionError, RuntimeError, aiohttp.ClientError):
                return False
            return True

        return write_plain
    write_data = _masking(writer)

    def write_masked(text: str) -> bool:
        return write_data(bytearray(text.encode()))

    return write_masked


def masking_writer(ws: aiohttp.ClientWebSocketResponse) -> Callable[[bytearray], bool] | None:
    """``frame_writer`` of an upstream socket for a text frame's payload in bytes
    (masked in place: it is the caller's no more); None where ``frame_writer`` would
    be, or on a socket that does not mask."""
    writer = _known_writer(ws)
    if writer is None or not writer.use_mask:
        return None
    return _masking(writer)


def _masking(writer: Any) -> Callable[[bytearray], bool]:
    write, closing = writer.transport.write, writer.transport.is_closing
    random_bits, mask = writer.get_random_bits, _mask

    def write_masked(data: bytearray) -> bool:
        if writer._closing or closing():
            return False
        n = len(data)
        key = _PACK_RANDBITS(random_bits())
        mask(key, data)
        try:
            if n < 126:
                write(_PACK_LEN1(0x81, n | 0x80) + key + data)
            elif n < 65536:
                write(_PACK_LEN2(0x81, 126 | 0x80, n) + key + data)
            else:
                write(_PACK_LEN3(0x81, 127 | 0x80, n) + key + data)
        except (ConnectionError, RuntimeError, aiohttp.ClientError):
            return False
        return True

    return write_masked
