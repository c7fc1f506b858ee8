"""Warn an idle client, then close it; end a session that lasted too long
(``Lifetime`` in ``proxy/client_limits.py`` holds the deadlines; docs/protocol.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from proxy.client_limits import Lifetime


async def watch_lifetime(
    life: Lifetime,
    send_error: Callable[[str, str], None],
    end: Callable[[str, int, str], Awaitable[None]],
) -> None:
    """Act on ``life``'s deadlines until one ends the session (``end``).

    It sleeps until the next moment something may be due: an idle session costs
    one wakeup per deadline, not a timer ticking."""
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(max(0.0, life.next_check() - loop.time()))
        now = loop.time()
        if now >= life.ends_at:
            send_error("session_expired", "the session reached its maximum duration")
            await end("session_expired", 1000, "maximum session duration")
            return
        if now >= life.idle_close_at():
            await end("session_idle_timeout", 1000, "idle timeout")
            return
        if not life.warned and now >= life.idle_close_at() - life.warn_s:
            life.warned = True
            left = life.idle_close_at() - now
            send_error(
                "session_idle_timeout",
                f"no input for {now - life.last_input:.0f} s: "
                f"the session closes in {left:.0f} s unless the client sends something",
            )
