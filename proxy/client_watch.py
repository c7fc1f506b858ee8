"""Act on a client's limits (``proxy/client_limits.py`` keeps the books;
docs/protocol.md): slow down or close a client sending audio too fast, warn an idle
client then close it, end a session that lasted too long."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from proxy.client_frames import ClientFrame
from proxy.client_limits import AUDIO_BYTES_PER_S, Lifetime, Rate, Verdict
from proxy.config import ServerConfig


def too_long(cost: int, limits: ServerConfig) -> tuple[str, str]:
    """The refusal of one append carrying more audio than the allowance ever holds
    (``input_burst_s`` ahead of real time): taken later, whole, it would hold up every
    other session while it is judged; refused at once, the session goes on."""
    seconds = cost / AUDIO_BYTES_PER_S
    return (
        "input_audio_too_long",
        f"one append carries {seconds:.1f} s of audio, more than the {limits.input_burst_s:g} s "
        "the proxy takes ahead of real time: refused; send audio in appends of a few "
        "hundred ms",
    )


def event_id_of(frame: ClientFrame) -> str | None:
    event_id = frame.event.get("event_id")
    return event_id if isinstance(event_id, str) else None


async def admit(
    verdict: Verdict,
    limits: ServerConfig,
    send_error: Callable[[str, str], None],
    end: Callable[..., Awaitable[None]],
) -> bool:
    """Act on an append over the client's audio allowance; False once it is closed."""
    if verdict.rate is Rate.CLOSE:
        await end("input_rate_exceeded", 1008, "input_rate_exceeded")
        return False
    if verdict.rate is Rate.WARN:
        send_error(
            "input_rate_exceeded",
            f"audio arrives faster than {limits.input_realtime_factor:g}x real time: "
            "send it in real time or the session closes in "
            f"{limits.input_rate_grace_s:g} s",
        )
    if verdict.wait_s > 0:
        await asyncio.sleep(verdict.wait_s)  # stop reading: the socket pushes back
    return True


async def watch_lifetime(
    life: Lifetime,
    send_error: Callable[[str, str], None],
    end: Callable[..., Awaitable[None]],
) -> None:
    """Act on ``life``'s deadlines until one ends the session (``end``, which sends
    the closing error after what the session still owes the client).

    It sleeps until the next moment something may be due: an idle session costs
    one wakeup per deadline, not a timer ticking."""
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(max(0.0, life.next_check() - loop.time()))
        now = loop.time()
        if now >= life.ends_at:
            told = ("session_expired", "the session reached its maximum duration")
            await end("session_expired", 1000, "maximum session duration", *told)
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
