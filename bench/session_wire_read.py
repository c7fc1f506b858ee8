"""The read side of ``bench/session_wire.py``'s lean client: an ``asyncio.Protocol``
that opens a WebSocket with a minimal HTTP upgrade, then scans the proxy's bytes for
frame boundaries (RFC 6455 5.2: unmasked server frames, 7/16/64-bit lengths) without
making a message of each frame. A text frame is looked at only in its first bytes
(``LOOK``, as ``bench/session_load.py``'s reader looks at the first characters of each
message); the rest of an uninteresting frame is skipped, even across reads."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import struct
import time
from typing import Any

SPEECH = b"input_audio_buffer.speech_"
ERROR = b'"error"'
LOOK, ERROR_LOOK = 120, 80  # the bytes of a text frame looked at for each
_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 1.3


def client_frame(payload: bytes, key: bytes, opcode: int = 0x1) -> bytes:
    """One final, masked client frame (RFC 6455 5.2) of ``payload`` under ``key``."""
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
    elif n < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
    mask = (key * (n // 4 + 1))[:n]
    masked = (int.from_bytes(payload, "big") ^ int.from_bytes(mask, "big")).to_bytes(n, "big")
    return head + key + masked


class FrameReader(asyncio.Protocol):
    """A client connection's reader. ``first`` resolves to the first text frame's
    payload, ``lost`` once the connection ends (or the proxy closes it)."""

    transport: Any

    def __init__(self) -> None:
        loop = asyncio.get_running_loop()
        self.first: asyncio.Future[bytes] = loop.create_future()
        self.lost: asyncio.Future[None] = loop.create_future()
        self.closed = False
        self._head: bytes | None = b""  # the HTTP response so far; None once upgraded
        self._accept = b""
        self._buf = bytearray()  # an unfinished frame (or its header)
        self._skip = 0  # payload bytes of an uninteresting frame still to come

    # What a Session does with the frames it reads.
    def on_speech(self, payload: bytes, now: float) -> None:
        raise NotImplementedError

    def on_error(self, payload: bytes, now: float) -> None:
        raise NotImplementedError

    def handshake(self, target: str, host: str, key: str) -> None:
        self._accept = base64.b64encode(hashlib.sha1(key.encode() + _GUID).digest())
        self.transport.write(
            f"GET {target} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n".encode()
        )

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self.first.done():
            self.first.set_exception(ConnectionError(f"closed before session.created: {exc}"))
        if not self.lost.done():
            self.lost.set_result(None)

    def close(self) -> None:
        if not self.closed and self._head is None:
            self.transport.write(client_frame(struct.pack("!H", 1000), os.urandom(4), 0x8))
        self.closed = True
        self.transport.close()

    def _fail(self, why: str) -> None:
        if not self.first.done():
            self.first.set_exception(ValueError(why))
        self.close()

    def data_received(self, data: bytes) -> None:
        if self._head is not None:
            head = self._head + data
            end = head.find(b"\r\n\r\n")
            if end < 0:
                self._head = head
                return
            lines = head[:end].split(b"\r\n")
            if not lines[0].startswith(b"HTTP/1.1 101") or not any(
                line.lower().startswith(b"sec-websocket-accept:")
                and line.split(b":", 1)[1].strip() == self._accept
                for line in lines[1:]
            ):
                self._fail(f"upgrade refused: {lines[0].decode(errors='replace')}")
                return
            self._head, data = None, head[end + 4 :]
        if self._skip:
            if len(data) <= self._skip:
                self._skip -= len(data)
                return
            data, self._skip = data[self._skip :], 0
        if self._buf:
            self._buf += data
            used = self._frames(self._buf)
            del self._buf[:used]
        else:
            used = self._frames(data)
            if used < len(data):
                self._buf = bytearray(data[used:])

    def _frames(self, data: bytes | bytearray) -> int:
        """Handle every whole frame of ``data`` (or enough of it to skip): the bytes used."""
        i, n, now = 0, len(data), 0.0
        while i + 2 <= n and not self.closed:
            b0, b1 = data[i], data[i + 1]
            size, p = b1 & 0x7F, i + 2
            if size == 126:
                if p + 2 > n:
                    break
                size, p = int.from_bytes(data[p : p + 2], "big"), p + 2
            elif size == 127:
                if p + 8 > n:
                    break
                size, p = int.from_bytes(data[p : p + 8], "big"), p + 8
            if b1 & 0x80 or b0 & 0x70:
                self._fail("a masked server frame, or one with RSV bits")
                break
            end, op = p + size, b0 & 0x0F
            if op == 0x1 and b0 & 0x80:
                if not self.first.done():
                    if end > n:
                        break
                    self.first.set_result(bytes(data[p:end]))
                    i = end
                    continue
                if min(end, p + LOOK) > n:
                    break  # not enough of it to tell
                if data.find(SPEECH, p, min(end, p + LOOK)) >= 0:
                    if end > n:
                        break
                    now = now or time.perf_counter()
                    self.on_speech(bytes(data[p:end]), now)
                elif data.find(ERROR, p, min(end, p + ERROR_LOOK)) >= 0:
                    if end > n:
                        break
                    now = now or time.perf_counter()
                    self.on_error(bytes(data[p:end]), now)
                elif end > n:
                    self._skip = end - n
                    return n
                i = end
            elif op in (0x9, 0xA):  # ping: answered with its payload; pong: nothing
                if end > n:
                    break
                if op == 0x9:
                    self.transport.write(client_frame(bytes(data[p:end]), os.urandom(4), 0xA))
                i = end
            elif op == 0x8 or op == 0x2:  # closed, or binary: the end, as for aiohttp's
                self.close()
                break
            else:  # a fragment: the proxy writes whole frames (the module's docstring)
                self._fail(f"fragmented frame (opcode {op}, FIN {b0 >> 7})")
                break
        return i
