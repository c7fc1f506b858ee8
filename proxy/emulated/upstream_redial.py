"""Reaching a lost upstream again without holding up the session loop.

A redial can take seconds (an upstream restarting refuses connections for a while,
and each try may wait out the connect and classify timeouts). Done inside the
session loop, nothing would answer the client meanwhile, not even a heartbeat. So
the tries run as a task of their own (``retrying``), with bounded attempts, a total
budget and a doubling backoff (``[redial]``, ``proxy/config_redial.py``); what the
session sends upstream meanwhile waits in an ``Outbox``; and the outcome comes back
to the loop as an ``InLoop`` item, applied in order with everything else.

A playback report (``playback.ack``, ``conversation.item.truncate``) the outbox
drops is kept (``unsent``) and told to the shim with the new socket: the shim
awaits an answer to each report it sent (``shim/dialects/relay_reports.py``), and
none will come to one that never reached the upstream.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson

from proxy.config_redial import RedialConfig
from proxy.upstream import UpstreamUnavailable

T = TypeVar("T")
MAX_BACKOFF_S = 2.0
REPORTS = ("playback.ack", "audio.playback_ack", "conversation.item.truncate")
# Reports are small: a bigger frame (audio) is not parsed to find out.
REPORT_MAX_CHARS = 4096
UNSENT_KEPT = 256  # as many as the shim keeps in flight


def report_in(text: str) -> dict[str, Any] | None:
    """The playback report ``text`` is, if it is one."""
    if len(text) > REPORT_MAX_CHARS or ("playback" not in text and "truncate" not in text):
        return None
    try:
        event = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return event if isinstance(event, dict) and event.get("type") in REPORTS else None


@dataclass
class InLoop:
    """Work for the session loop, run in order with the other items on its queue."""

    run: Callable[[], Awaitable[None]]


async def retrying(
    attempt: Callable[[], Awaitable[T]],
    policy: RedialConfig,
    on_failure: Callable[[int, UpstreamUnavailable], None],
) -> T:
    """``attempt()`` until it succeeds, within ``policy``'s tries and budget.

    Only an unreachable upstream (``UpstreamUnavailable``) is tried again: an upstream
    that answered with an error (``UpstreamRefused``) has said no. Raises the last
    error once the tries or the budget are spent (a try cut by the budget raises
    ``UpstreamUnavailable``)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + policy.budget_s
    pause = policy.backoff_s
    tried = 0
    while True:
        tried += 1
        left = deadline - loop.time()
        try:
            async with asyncio.timeout(left):
                return await attempt()
        except TimeoutError:
            raise UpstreamUnavailable(
                f"the upstream was not reached within {policy.budget_s:g} s"
            ) from None
        except UpstreamUnavailable as exc:
            on_failure(tried, exc)
            left = deadline - loop.time()
            if tried >= policy.attempts or left <= pause:
                raise
        await asyncio.sleep(pause)
        pause = min(pause * 2, MAX_BACKOFF_S)


class Outbox:
    """What the session sends upstream while there is no upstream socket to take it.

    Held in order, up to ``limit`` bytes, and sent once the new socket is there; past
    the limit a frame is dropped, and ``overflowed`` says so (the client is told once)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.frames: deque[str] = deque()
        self.size = 0
        self.overflowed = False
        self.told = False  # the client heard that something was dropped
        self.unsent: list[dict[str, Any]] = []  # the reports dropped

    @classmethod
    def replacing(cls, old: Outbox | None, limit: int) -> Outbox:
        """A new outbox for the same upstream session: what ``old`` held is dropped."""
        new = cls(limit)
        if old is not None:
            dropped = [r for t in old.frames if (r := report_in(t)) is not None]
            new.unsent = [*old.unsent, *dropped][-UNSENT_KEPT:]
        return new

    def hold(self, text: str) -> bool:
        """Keep ``text`` for the new socket; False when it did not fit (dropped)."""
        if self.size + len(text) > self.limit:
            self.overflowed = True
            if (report := report_in(text)) is not None and len(self.unsent) < UNSENT_KEPT:
                self.unsent.append(report)
            return False
        self.frames.append(text)
        self.size += len(text)
        return True

    def take(self) -> list[str]:
        frames = list(self.frames)
        self.frames.clear()
        self.size = 0
        return frames
