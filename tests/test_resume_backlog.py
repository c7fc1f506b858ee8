"""A resume is answered while the session it names works through an input backlog (a
regression seen in bench/soak.py): the session pauses between inputs to checkpoint.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json

from tests.resume_client import created, resumable, send_resume
from tests.servers import connect, proxy_config, reference, replica, silence, ws_url


async def test_a_resume_is_answered_while_the_session_works_through_a_backlog() -> None:
    """A regression seen in bench/soak.py: a session behind on its input (a flood of
    appends, each waiting for its VAD window) never paused between two inputs, and a
    resume waits for such a pause to checkpoint the session: it got no answer until
    the flood was worked through (here, never: the old connection keeps flooding)."""
    server = {"input_realtime_factor": 1e6, "input_burst_s": 1e6}
    async with (
        reference("turn", reply_ms=600) as up,
        replica(proxy_config({"m": up}, server=server), "a") as base,
    ):
        async with connect(ws_url(base)) as c1:
            s = await created(c1)
            assert resumable(c1)
            s.take(c1)
            frame = json.dumps(
                {
                    "type": "input_audio_buffer.append",
                    "audio": base64.b64encode(silence(20)).decode(),
                }
            )
            sent = 0

            async def flood() -> None:
                nonlocal sent
                while True:  # until cancelled: the session never catches up
                    await c1.ws.send_str(frame)
                    sent += 1

            flooding = asyncio.create_task(flood())
            try:
                # Pushed back: the proxy stopped reading, the session is behind.
                for _ in range(2000):
                    if sent >= 3000:
                        break
                    await asyncio.sleep(0.01)
                assert sent >= 3000, sent
                # No model in its URL: the handshake waits for the first event, where
                # one naming a model opens a fresh session after first_event_wait_ms
                # (50 ms), which this loop, busy with the flood, may let pass.
                async with connect(ws_url(base, model=None)) as c2:
                    first = await send_resume(c2, s)
                    assert first["type"] == "session.resumed", first
            finally:
                flooding.cancel()
                with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                    await flooding
