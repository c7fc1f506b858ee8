"""One append carrying more audio than the allowance ever holds is refused at once.

The proxy takes a client's audio up to ``input_burst_s`` ahead of real time
(``proxy/client_limits.py``). An append longer than that alone could only be taken by
stopping the client's reads until real time caught up, and then judged whole, holding
up every other session meanwhile: it is refused (``input_audio_too_long``), and the
session goes on (``proxy/client_watch.py``).
"""

from __future__ import annotations

import pybase64
import pytest

from tests.servers import load_clip, proxied_client

pytestmark = pytest.mark.timeout(60)

BURST_S = 2.0


def append(pcm: bytes, event_id: str) -> dict[str, str]:
    audio = pybase64.b64encode(pcm).decode()
    return {"type": "input_audio_buffer.append", "event_id": event_id, "audio": audio}


@pytest.mark.parametrize("query", [{}, {"duplex": "1"}], ids=["ga", "native"])
async def test_an_append_longer_than_the_burst_is_refused_and_the_session_goes_on(
    query: dict[str, str],
) -> None:
    speech = load_clip("utt05_clean.wav")  # 24 kHz PCM16, over 3 s
    too_long = speech[: int(24000 * 2 * (BURST_S + 1))]
    server = {"input_burst_s": BURST_S}
    async with proxied_client("turn", reply_ms=300, server=server, **query) as c:
        await c.until("session.created")
        if query:  # a native client's appends are 16 kHz unless it says otherwise
            fmt = {"input_audio_format": "pcm16", "sample_rate_hz": 24000}
            await c.send({"type": "session.update", "session": fmt})
            await c.until("session.updated")
        await c.send(append(too_long, "evt_long"))
        refused = (await c.until("error"))["error"]
        assert (refused["code"], refused["event_id"]) == ("input_audio_too_long", "evt_long")
        await c.send(append(speech[: 24000 * 2], "evt_ok"))  # one second: taken
        await c.send({"type": "session.heartbeat"})
        await c.until("session.heartbeat_ack")
        assert [e["error"]["code"] for e in c.of("error")] == ["input_audio_too_long"]
        assert not c.ws.closed
