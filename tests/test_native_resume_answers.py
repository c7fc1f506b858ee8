"""A failed resume in the words of the client's protocol (``proxy/resume/native_answer.py``).

A GA client gets the proxy's codes (docs/protocol.md, "Errors"); a native client gets
vLLM-Omni 0.30.0's, the ones its ``DuplexClient`` takes as final: a wrong token is
``invalid_resume_token``, and a resume from before what the journal still holds is a
``session.resync_required`` with ``reason: journal_gap`` (no error). A native client
that connected with ``autostart=0`` is then closed, with nothing opened for it.
"""

from __future__ import annotations

import pytest

from tests.resume_client import Tracked, acked_turn
from tests.servers import Client, closed, connect, proxy, proxy_config, reference, ws_url

pytestmark = pytest.mark.timeout(60)

NATIVE = {"duplex": "1", "autostart": "0"}


async def _acked_session(base: str) -> tuple[Tracked, int]:
    """A session that spoke a turn and acked all of it: events before the ack are gone."""
    async with connect(ws_url(base)) as c:
        return await acked_turn(c)


async def _resume(c: Client, s: Tracked, token: str, last: int) -> dict[str, object]:
    await c.send(
        {
            "type": "session.resume",
            "session_id": s.sid,
            "resume_token": token,
            "last_received_server_event_seq": last,
        }
    )
    return await c.recv()


@pytest.mark.parametrize("native", [True, False], ids=["native", "ga"])
async def test_a_wrong_token(native: bool) -> None:
    async with reference("turn", reply_ms=400) as up, proxy(proxy_config({"m": up})) as base:
        s, acked = await _acked_session(base)
        async with connect(ws_url(base, **(NATIVE if native else {}))) as c:
            answer = await _resume(c, s, "not-the-token", acked)
            assert answer["type"] == "error", answer
            code = answer["error"]["code"]  # type: ignore[index]
            assert code == ("invalid_resume_token" if native else "session_resume_denied")
            if native:
                assert await closed(c) == 1008
                assert not c.of("session.created")


@pytest.mark.parametrize("native", [True, False], ids=["native", "ga"])
async def test_a_resume_from_before_the_acked_events(native: bool) -> None:
    async with reference("turn", reply_ms=400) as up, proxy(proxy_config({"m": up})) as base:
        s, acked = await _acked_session(base)
        async with connect(ws_url(base, **(NATIVE if native else {}))) as c:
            answer = await _resume(c, s, s.token, acked - 3)
            if native:
                told = (answer["type"], answer.get("session_id"), answer.get("reason"))
                assert told == ("session.resync_required", s.sid, "journal_gap"), answer
                assert "server_event_seq" not in answer, "vLLM-Omni journals no resync"
                assert await closed(c) == 1008
                assert not c.of("session.created") and not c.of("error")
            else:
                assert answer["type"] == "error", answer
                assert answer["error"]["code"] == "session_resume_gap"  # type: ignore[index]
