"""The session's own events, refused in the words of the client's protocol.

In the emulated modes the proxy answers ``session.resume`` and ``session.event_ack``
itself (``proxy/emulated/session_controls.py``). A refusal names the client's
``event_id``; a native client gets vLLM-Omni's code and words
(``entrypoints/duplex/serving.py``): ``unsupported_session_resume`` for a resume
that is not a connection's first message, and an ack past the journal's head "newer
than journal head".
"""

from __future__ import annotations

import pytest

from tests.servers import proxied_client

pytestmark = pytest.mark.timeout(60)

KINDS = [("turn", "duplex_emulated"), ("duplex-no-barge-in", "barge_in_emulated")]
RESUME = {
    "type": "session.resume",
    "event_id": "evt_resume",
    "session_id": "sess_" + "0" * 32,
    "resume_token": "t",
    "last_received_server_event_seq": 0,
}
ACK = {"type": "session.event_ack", "event_id": "evt_ack", "server_event_seq": 10**9}


@pytest.mark.parametrize("native", [True, False], ids=["native", "ga"])
@pytest.mark.parametrize(("kind", "mode"), KINDS, ids=[m for _, m in KINDS])
async def test_a_late_resume_and_an_ack_past_the_head(kind: str, mode: str, native: bool) -> None:
    query = {"duplex": "1", "autostart": "0"} if native else {}
    async with proxied_client(kind, **query) as c:
        await c.send({"type": "session.update", "session": {"output_modalities": ["audio"]}})
        created = await c.until("session.created")
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        await c.send(RESUME)
        late = (await c.until("error"))["error"]
        code = "unsupported_session_resume" if native else "invalid_session_resume"
        assert (late["code"], late["event_id"]) == (code, "evt_resume"), late
        await c.send(ACK)
        past = (await c.until("error"))["error"]
        assert (past["code"], past["event_id"]) == ("invalid_event_ack", "evt_ack"), past
        if native:
            assert past["message"].startswith("acknowledged sequence 1000000000 is newer")


@pytest.mark.parametrize(("kind", "mode"), KINDS, ids=[m for _, m in KINDS])
async def test_every_event_names_the_session_the_client_was_given(kind: str, mode: str) -> None:
    """A duplex upstream's events name its own session: the client's is the proxy's
    (``proxy/emulated/client_side.py``), as vLLM-Omni's events all name one session."""
    async with proxied_client(kind, duplex="1", autostart="0") as c:
        await c.send({"type": "session.update", "session": {"output_modalities": ["audio"]}})
        created = await c.until("session.created")
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        await c.send({"type": "session.heartbeat"})
        ack = await c.until("session.heartbeat_ack")
        await c.send({"type": "session.close"})
        await c.until("session.closed")
        named = {e.get("session_id") for e in c.events if "session_id" in e}
        assert named == {created["session"]["id"]}, (named, ack)
