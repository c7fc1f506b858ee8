"""``RawSplit`` (``proxy/ws_raw.py``) takes whole frames before aiohttp's parser, and
leaves the socket's messages what they would have been without it.

A stream of frames of every kind (small and 16-bit-length text, non-ASCII text,
binary, pings, a fragmented message with a ping inside it, a length not in its
shortest form, a frame over the queue's limit, frames masked the wrong way, an
unknown opcode) cut into chunks anywhere is fed to aiohttp's parser alone, and to a
``RawSplit`` in front of another whose tap takes some of the text frames. What the
tap took, in its place among the queued messages, must be the plain parser's
messages, error and all, and every frame taken must be a whole one.
"""

from __future__ import annotations

import asyncio
import os
import struct
from itertools import pairwise

from hypothesis import example, given, settings
from hypothesis import strategies as st

from proxy import ws_direct
from proxy.ws_raw import RawSplit
from tests.socket_protocol import PausableProtocol

LIMIT = 2**16  # the queue's (aiohttp stalls a read that fills it)


def frame(
    opcode: int, payload: bytes, masked: bool, fin: bool = True, long_form: bool = False
) -> bytes:
    """One frame (RFC 6455 5.2); ``long_form``: a 16-bit length even when 7 bits do."""
    n = len(payload)
    head = bytes([(0x80 if fin else 0) | opcode])
    bit = 0x80 if masked else 0
    if n < 126 and not long_form:
        head += bytes([bit | n])
    elif n < 65536:
        head += struct.pack("!BH", bit | 126, n)
    else:
        head += struct.pack("!BQ", bit | 127, n)
    if not masked:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def unmasked(data: bytes, head: int) -> bytes:
    payload = data[head:]
    if head in (2, 4):  # no key
        return payload
    key = data[head - 4 : head]
    return bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def text(i: int, extra: str = "") -> bytes:
    return f'{{"type":"t","i":{i}{extra}}}'.encode()


KINDS = ["small", "medium", "keep", "utf8", "binary", "ping", "fragmented", "long_form"]
KINDS += ["big", "wrong_mask", "unfinished", "bad_opcode"]


def stream(kinds: list[str], masked: bool) -> tuple[bytes, list[int]]:
    """The frames' bytes, and where each frame and its payload begin."""
    out = b""
    starts: list[int] = []
    for i, kind in enumerate(kinds):
        starts.append(len(out))
        if kind == "small":
            out += frame(1, text(i), masked)
        elif kind == "medium":
            out += frame(1, text(i, ',"pad":"' + "a" * 300 + '"'), masked)
        elif kind == "keep":  # a text frame the tap does not take
            out += frame(1, text(i, ',"keep":1'), masked)
        elif kind == "utf8":
            out += frame(1, text(i, ',"s":"é"'), masked)
        elif kind == "binary":  # holding a text frame: cut before it, it is no frame
            out += frame(2, frame(1, text(i), masked), masked)
        elif kind == "ping":
            out += frame(9, b"p", masked)
        elif kind == "fragmented":
            out += frame(1, text(i)[:5], masked, fin=False)
            out += frame(9, b"q", masked)
            out += frame(0, text(i)[5:], masked)
        elif kind == "long_form":
            out += frame(1, text(i), masked, long_form=True)
        elif kind == "big":
            out += frame(1, text(i, ',"pad":"' + "b" * 70_000 + '"'), masked)
        elif kind == "wrong_mask":
            out += frame(1, text(i), not masked)
        elif kind == "unfinished":  # a message's first frame, what follows is not its next
            out += frame(1, text(i), masked, fin=False)
        else:  # bad_opcode: aiohttp refuses it, and nothing after it is read
            out += frame(3, b"x", masked)
    starts.append(len(out))
    return out, starts


def taken_by_tap(payload: bytes) -> bool:
    return b'"keep"' not in payload


async def messages(
    chunks: list[bytes], masked: bool, split: bool, taken: list[str] | None = None
) -> list[object]:
    """What a reader gets of ``chunks`` (the tap's frames in their place), and how it
    ended; ``taken``: the tap's frames."""
    queue = ws_direct.TapQueue(PausableProtocol(), LIMIT, loop=asyncio.get_running_loop())
    parser = ws_direct._Parser(queue, 2**20, compress=False, decode_text=True)
    feed = RawSplit(parser, queue, masked=masked) if split else parser
    got: list[object] = []

    def raw(data: bytes, head: int) -> bool:
        assert len(data) >= head
        payload = unmasked(data, head)
        if not taken_by_tap(payload):
            return False
        got.append(("TEXT", payload.decode()))
        if taken is not None:
            taken.append(payload.decode())
        return True

    def tap(_text: str) -> bool:
        return False  # queued: the raw tap is the one under test

    error = False
    for chunk in chunks:
        queue.tap, queue.raw = tap, raw  # armed while nothing is in hand, as the relay does
        if feed.feed_data(chunk)[0]:
            error = True
        queue.tap = queue.raw = None
        while queue._buffer or queue.exception() is not None:
            try:
                msg = await queue.read()
            except Exception as exc:
                got.append(("error", type(exc).__name__, str(exc)))
                return got
            got.append((msg[0].name, msg[1]))
        if error:
            break
    return got


@settings(max_examples=300, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(KINDS), max_size=12),
    masked=st.booleans(),
    cuts=st.lists(
        st.tuples(st.integers(0, 12), st.sampled_from([0, 0, 1, 2, 3, 4, 6, 8, 10, 50, 999])),
        max_size=8,
    ),
)
# A text frame right after a message's unfinished first frame; a binary frame's
# payload (a text frame's bytes) read first; the same after a header cut in two.
@example(kinds=["small", "unfinished", "small"], masked=False, cuts=[(2, 0)])
@example(kinds=["binary", "small"], masked=False, cuts=[(0, 2)])
@example(kinds=["binary", "small"], masked=True, cuts=[(0, 6)])
@example(kinds=["binary", "small"], masked=False, cuts=[(0, 1), (0, 2)])
def test_the_messages_are_the_parsers_alone(
    kinds: list[str], masked: bool, cuts: list[tuple[int, int]]
) -> None:
    """Cut at frame starts, inside headers, at payloads' starts (a binary frame's
    payload is a text frame's bytes), and anywhere."""
    data, starts = stream(kinds, masked)
    at = {starts[j % len(starts)] + k for j, k in cuts}
    points = sorted({p for p in at if p < len(data)} | {0, len(data)})
    chunks = [data[a:b] for a, b in pairwise(points) if b > a]

    async def both() -> tuple[list[object], list[object]]:
        return await messages(chunks, masked, False), await messages(chunks, masked, True)

    plain, split = asyncio.run(both())
    assert split == plain


def test_whole_text_frames_of_a_chunk_go_to_the_tap() -> None:
    """Not only equal: the tap takes the frames it may (a chunk of small text frames,
    one it declines, then one after it, which the parser then has)."""
    data = frame(1, text(0), True) + frame(1, text(1), True) + frame(1, text(2, ',"keep":1'), True)
    data += frame(1, text(3), True)

    taken: list[str] = []

    async def run() -> list[object]:
        return await messages([data], masked=True, split=True, taken=taken)

    got = asyncio.run(run())
    assert taken == [text(i).decode() for i in (0, 1)]
    assert [g[1] for g in got] == [*taken, text(2, ',"keep":1').decode(), text(3).decode()]
