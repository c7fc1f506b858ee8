"""Whole text frames taken from a socket's bytes before aiohttp's parser reads them.

``proxy/ws_direct.py``'s ``TapQueue`` takes a frame once aiohttp's parser made a
message of it: the header read, the payload cut out and decoded to a ``str``, a
message tuple made, and then, to relay it, the text encoded and framed again.
``RawSplit`` sits in front of that parser (the protocol feeds it the socket's
bytes) and, while its queue's tap is armed and nothing waits before the bytes,
offers each complete frame of a chunk, as it came, to a ``RawTap``: a final
(FIN), uncompressed text frame (no RSV bit), masked as the socket's peer must mask
(a client's frames) or not (an upstream's), its length in the shortest form and
up to 64 KiB. The first frame the tap does not take, and everything after it, go to
aiohttp's parser, which then behaves exactly as without ``RawSplit``: it sees every
other frame (control frames, fragments, binary frames, bad frames) and refuses what
it refuses.

The parser keeps an unfinished frame (or a fragmented message) between chunks, and
keeps bytes it has not parsed while its queue is over its limit; its state is not
readable from Python, so ``RawSplit`` follows the frame boundaries of every byte it
hands over itself (``_follow``), and takes frames only at a boundary, outside a
fragmented message, with the parser's queue empty and no read stalled.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# A frame as it came (header, mask key if any, payload) and where its payload starts:
# True if taken (it goes nowhere else), False to leave it to aiohttp's parser.
RawTap = Callable[[bytes, int], bool]

_FIN_TEXT = 0x81  # FIN, no RSV bit, opcode 1 (RFC 6455 5.2)
_MASKED = 0x80
_EMPTY = (False, b"")  # what aiohttp's parser's feed_data says of a chunk it took


class RawSplit:
    """The payload parser a socket's protocol feeds (``feed_data``), in front of
    aiohttp's (``parser``). ``queue`` is the socket's ``TapQueue``: its ``raw`` is
    the tap, used only while its ``tap`` is armed too (the relay arms both, and a
    frame the queue's tap does not take disarms both)."""

    __slots__ = ("_frag", "_head", "_rest", "masked", "parser", "queue")

    def __init__(self, parser: Any, queue: Any, masked: bool) -> None:
        self.parser = parser
        self.queue = queue
        self.masked = _MASKED if masked else 0
        self._rest = 0  # bytes of a frame the parser has begun, still to come
        self._head = b""  # the start of a header the parser has begun
        self._frag = False  # inside a fragmented message

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        queue = self.queue
        tap = queue.raw
        if (
            tap is None
            or queue.tap is None
            or self._rest
            or self._head
            or self._frag
            or queue._buffer
            or queue._stalled_reader is not None
            or type(data) is not bytes
        ):
            self._follow(data)
            return self.parser.feed_data(data)  # type: ignore[no-any-return]
        n, i, masked = len(data), 0, self.masked
        while i + 2 <= n:
            b1 = data[i + 1]
            if data[i] != _FIN_TEXT or b1 & _MASKED != masked:
                break
            size, head = b1 & 0x7F, 2
            if size == 126:
                if i + 4 > n:
                    break
                size, head = (data[i + 2] << 8) | data[i + 3], 4
                if size < 126:  # not the shortest form: the parser's to judge
                    break
            elif size == 127:
                break
            if masked:
                head += 4
            end = i + head + size
            if end > n:
                break
            try:
                took = tap(data if i == 0 and end == n else data[i:end], head)
            except Exception:  # never into the protocol: the parser takes it instead
                took = False
            if not took:
                break
            i = end
        if i == n:
            return _EMPTY
        rest = data[i:] if i else data
        self._follow(rest)
        return self.parser.feed_data(rest)  # type: ignore[no-any-return]

    def feed_eof(self) -> None:
        self.parser.feed_eof()

    def _follow(self, data: bytes) -> None:
        """Where the frames of ``data``, handed to the parser, begin and end."""
        if self._head:
            data, self._head = self._head + data, b""
        n, i = len(data), self._rest
        while i < n:
            if i + 2 > n:
                self._head = data[i:]
                i = n
                break
            b0, b1 = data[i], data[i + 1]
            size = b1 & 0x7F
            head = 2 if size < 126 else 4 if size == 126 else 10
            if b1 & _MASKED:
                head += 4
            if i + head > n:
                self._head = data[i:]
                i = n
                break
            if size >= 126:
                size = int.from_bytes(data[i + 2 : i + (4 if size == 126 else 10)], "big")
            if b0 & 0x0F < 8:  # a data frame: a message ends with its final frame
                self._frag = not b0 & 0x80
            i += head + size
        self._rest = i - n
