"""A client's frame taken as it came, before aiohttp's parser (``proxy/ws_raw.py``).

``ClientChannel._take`` works on the text aiohttp's parser made of a frame: unmasked,
decoded, and then, to go up, encoded and masked again. ``made_taker`` gives the
client socket's raw tap, which does the same work on the frame's own bytes:
unmasked once into a buffer that is masked again in place for the upstream
(``proxy/ws_write.py``'s ``masking_writer``), with the same checks, the same audio
allowance and the same bookkeeping. It takes only what ``_take`` would take, and
only a frame whose text is ASCII (so valid UTF-8) and flat
(``proxy/client_frames.py``'s ``parse_flat_ascii``); any other frame goes to aiohttp's
parser and ``_take`` or the reader, as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from proxy.client_frames import parse_flat_ascii
from proxy.ws_raw import RawTap

try:  # a private module: its absence only turns this path off
    from aiohttp._websocket import helpers as _helpers
except ImportError:  # pragma: no cover - another aiohttp
    _helpers = None  # type: ignore[assignment]

_mask: Any = getattr(_helpers, "websocket_mask", None)  # XORs a bytearray in place

# What a consumer that takes frames as they came sets (``ClientChannel.sink_made``):
# can a frame of that many bytes go now; take its event and its unmasked bytes.
SinkMade = tuple[Callable[[int], bool], Callable[[dict[str, Any], bytearray], None]]


def made_taker(channel: Any) -> RawTap | None:
    """The raw tap of a ``ClientChannel``'s socket (None without aiohttp's mask)."""
    if _mask is None:
        return None
    mask, inbox, limits, rate, lifetime, caps = (
        _mask,
        channel.inbox,
        channel.limits,
        channel.rate,
        channel.lifetime,
        channel.caps,
    )
    time, tally = channel._loop.time, channel._tally_in.add

    def take(frame: bytes, head: int) -> bool:
        made, n = channel.sink_made, len(frame) - head
        if made is None or channel.sink is None or channel._reader_stopped or not inbox.empty():
            return False
        if n > limits.max_frame_bytes or not made[0](n) or head < 6:  # (unmasked: not a client's)
            return False
        payload = bytearray(frame[head:])
        mask(frame[head - 4 : head], payload)
        if not payload.isascii() or (event := parse_flat_ascii(payload, caps)) is None:
            return False
        now = time()
        if not rate.take(event, now):
            return False  # the reader answers, or slows down
        tally(n)
        lifetime.heard(now)
        made[1](event, payload)
        return True

    return take
