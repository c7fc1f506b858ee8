"""A client's first event, read as the proxy's wait for it ends.

A URL naming a model opens a session after ``first_event_wait_ms`` (50 ms) without a
first event (``proxy/handshake/client_session.py``). On a loaded machine the loop may
run late: the frame that arrived in time and the timer that ends the wait come due in
the same turn, the timer's callback running before the reader that hands the frame
over. A ``session.resume`` sent at once was then taken for a client saying nothing:
it got a fresh session, its own lost.

A first event that comes later than the wait (a big one from a loaded or distant
client) is not lost either: the session opens without it, and it is applied first
after ``session.created``, the rest after it in order (docs/protocol.md).
"""

from __future__ import annotations

import asyncio
import time

import pytest

from proxy.reference.options import ReferenceOptions
from tests.resume_client import created, send_resume
from tests.servers import connect, proxy, proxy_config, proxy_with_state, reference, ws_url


async def test_a_resume_sent_at_once_is_a_resume_though_the_loop_ran_late() -> None:
    async with (
        reference("turn", reply_ms=500) as up,
        proxy_with_state(proxy_config({"m": up})) as (base, _),
    ):
        async with connect(ws_url(base)) as c0:
            s = await created(c0)
        async with connect(ws_url(base)) as c:
            await asyncio.sleep(0.01)  # the proxy waits for the first event now
            resume = send_resume(c, s)
            sender = asyncio.ensure_future(resume)
            await asyncio.sleep(0)  # the frame is written
            time.sleep(0.2)  # noqa: ASYNC251 (the loop, the proxy too, held past the wait)
            first = await sender
        assert first["type"] == "session.resumed", first


async def test_a_first_update_later_than_the_wait_is_applied_first_after_created() -> None:
    # Held while it warms up, the upstream answers after the late frames are in.
    options = ReferenceOptions(warmup_s=1.0)
    async with (
        reference("duplex-no-barge-in", options=options) as up,
        proxy(proxy_config({"m": up})) as base,
        connect(ws_url(base)) as c,
    ):
        await asyncio.sleep(0.2)  # the proxy's 50 ms wait for a first event is over
        for i in range(3):
            await c.send({"type": "session.update", "session": {"instructions": f"late {i}"}})
        created = await c.until("session.created")
        assert created["session"].get("instructions") != "late 0", "it came in time after all"
        told = [(await c.until("session.updated"))["session"]["instructions"] for _ in range(3)]
        assert told == ["late 0", "late 1", "late 2"]
        assert not c.of("error"), c.of("error")


@pytest.mark.parametrize(
    "kind", ["duplex", "duplex-no-barge-in"], ids=["passthrough", "barge_in_emulated"]
)
async def test_a_late_opening_update_is_a_live_one_its_ref_audio_refused(kind: str) -> None:
    """A speak-first client's update later than the wait opens nothing: the session
    opened without it, and the upstream refuses its ``ref_audio`` as on any live
    session (docs/protocol.md, "Opening a session"); the session goes on."""
    options = ReferenceOptions(warmup_s=1.0)
    opening = {"instructions": "late", "ref_audio": "data:audio/wav;base64,AAAA"}
    async with (
        reference(kind, options=options) as up,
        proxy(proxy_config({"m": up})) as base,
        connect(ws_url(base, duplex="1")) as c,
    ):
        await asyncio.sleep(0.2)  # the proxy's 50 ms wait for a first event is over
        await c.send({"type": "session.update", "session": opening})
        await c.send({"type": "session.update", "session": {"instructions": "later"}})
        created = await c.until("session.created")
        assert created["session"].get("instructions") != "late", "it came in time after all"
        refused = await c.until("error")
        assert refused["error"]["code"] == "ref_audio_update_unsupported", refused
        updated = await c.until("session.updated")
        while updated["session"].get("instructions") != "later":
            assert updated["session"].get("instructions") != "late", "the refused update applied"
            updated = await c.until("session.updated")
