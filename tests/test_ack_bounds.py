"""A ``playback.ack`` no playback reaches is refused, and the session survives whole.

JSON carries numbers of any size: an ack's ``played_ms`` of 1e20 is a number, and
taken as one it was told back (past 64 bits no JSON writer of the proxy could write
it: the session failed) or kept in the session's record (every later store write
failed: the resume was lost, the slot never given back). Such an ack is refused
(``invalid_value``, ``shim/client_events.py``), never kept or relayed, in every mode;
the session resumes afterwards as before. The duplex stand-in, as vLLM-Omni, takes
any size (tests/test_reference_*).
"""

from __future__ import annotations

import pytest

from tests.resume_client import created, resumed
from tests.servers import connect, drop, proxy, proxy_config, reference, ws_url

pytestmark = pytest.mark.timeout(60)

KINDS = [("turn", "duplex_emulated"), ("duplex-no-barge-in", "barge_in_emulated")]
ACKS = [{"played_ms": 1e20}, {"played_ms": 100, "committed_ms": 2**70}]


@pytest.mark.parametrize("native", [True, False], ids=["native", "ga"])
@pytest.mark.parametrize(("kind", "mode"), KINDS, ids=[m for _, m in KINDS])
async def test_an_ack_past_any_playback_is_refused_and_the_session_resumes(
    kind: str, mode: str, native: bool
) -> None:
    query = {"duplex": "1"} if native else {}
    async with reference(kind) as up, proxy(proxy_config({"m": up})) as base:
        async with connect(ws_url(base, **query)) as c:
            s = await created(c)
            for i, ack in enumerate(ACKS):
                await c.send({"type": "playback.ack", "event_id": f"ack{i}", **ack})
                refused = (await c.until("error"))["error"]
                assert refused["event_id"] == f"ack{i}", refused
                assert refused["code"] == "invalid_value", refused
            await c.send({"type": "session.heartbeat"})
            await c.until("session.heartbeat_ack")  # the session goes on
            s.take(c)
            drop(c)
        async with connect(ws_url(base, **query)) as c2:
            back = await resumed(c2, s)
            assert back["session"]["capabilities"]["proxy"]["mode"] == mode


async def test_passthrough_relays_it_and_the_stand_in_survives_it() -> None:
    """In passthrough the ack is the upstream's to judge; the stand-in, as vLLM-Omni
    (Python integers, Starlette's ``json.dumps``), answers it and goes on."""
    async with reference("duplex") as up, proxy(proxy_config({"m": up})) as base:
        async with connect(ws_url(base, duplex="1")) as c:
            created_ev = await c.until("session.created")
            assert created_ev["session"]["capabilities"]["proxy"]["mode"] == "passthrough"
            await c.send({"type": "playback.ack", "played_ms": 1e20, "committed_ms": 2**70})
            await c.send({"type": "session.heartbeat"})
            await c.until("session.heartbeat_ack")  # the upstream session goes on
            assert not c.ws.closed
