"""Every client attachment an emulated session was handed, until it ends.

An attachment waits on the session's queue, then in its loop's hand, before the
session serves it (``ClientSide.attach``). A session that ends meanwhile never
will: each such attachment is closed as the attached client is, with the session's
close code and reason, and its feed returns (``feeders.feed_attachment``). One
handed over once the session is ending is closed at once. Else its client's socket
and task would wait for good.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from proxy.emulated.queue_items import Attach


class Attachments:
    def __init__(self) -> None:
        self._waiting: list[Attach] = []
        # The session's close code and reason, once it ends.
        self.end: tuple[int, str] | None = None

    async def run(self, attach: Attach, feed: Callable[[], Awaitable[None]]) -> None:
        """``feed`` the attachment until it ends; closed at once if the session is ending."""
        if self.end is not None:
            await turn_away(attach, *self.end)
            return
        self._waiting.append(attach)
        try:
            await feed()
        finally:
            self._waiting.remove(attach)

    def pending(self) -> bool:
        """An attachment was handed over and has not ended (a resume on its way in)."""
        return any(not a.done.is_set() for a in self._waiting)

    def ending(self, code: int, reason: str) -> None:
        """The session ends: from now on no attachment is served."""
        self.end = (code, reason)

    async def close_unserved(self, attached: Attach | None) -> None:
        """Close every attachment but ``attached`` (closed by the session itself)
        that has not ended: the session will not serve them now."""
        assert self.end is not None
        left = [a for a in self._waiting if a is not attached and not a.done.is_set()]
        await asyncio.gather(*(turn_away(a, *self.end) for a in left))


async def turn_away(attach: Attach, code: int, reason: str) -> None:
    """Close an attachment never served. A drain (1012) hands the session on: the
    client first gets its opening (``session.created`` or ``session.resumed``, with
    the resume token it needs to resume elsewhere)."""
    try:
        if code == 1012:
            for event in attach.first_events:
                attach.client.send_event(event)
        await attach.client.close(code, reason)
    finally:
        attach.done.set()
