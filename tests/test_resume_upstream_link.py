"""The proxy's own link to the upstream breaks under a live session: a dropped socket
resumes the upstream session with nothing lost or doubled, and an upstream that
restarted gets a fresh session carrying the client's settings and talk, the cut answer
ended ``incomplete``. The client keeps one exactly-once event stream throughout.
"""

from __future__ import annotations

from tests.resume_client import (
    answered,
    created,
    cut_answer_ends,
    mid_answer,
    reattached,
    speak,
    transcript_of,
    until_deltas,
)
from tests.servers import connect, host_port, proxy, proxy_config, reference, tcp_link, ws_url


async def test_a_dropped_upstream_socket_resumes_the_upstream_session() -> None:
    """The network between proxy and upstream fails mid-answer: the client notices
    nothing; the upstream replays what the proxy missed and the answer goes on."""
    async with (
        reference("duplex-no-barge-in", reply_ms=3000) as up,
        tcp_link(up) as link,
        proxy(proxy_config({"m": link.url(up)})) as base,
        connect(ws_url(base)) as c,
    ):
        s = await mid_answer(c)
        rid = c.of("response.created")[-1]["response"]["id"]
        assert link.cut() == 1
        full = await c.until("response.output_audio_transcript.done", timeout=20)
        assert await reattached(base) == {"resumed": 1}
        done = await c.until("response.done", timeout=20)
        assert done["response"]["id"] == rid
        assert done["response"]["status"] == "completed"
        s.take(c)
        assert transcript_of(s.events, rid) == full["transcript"], "nothing lost, nothing twice"
        await answered(c)
        s.take(c)
        s.assert_exactly_once()


async def test_a_restarted_upstream_ends_the_response_incomplete_and_talks_on() -> None:
    """The upstream lost its sessions (it restarted): no resume there, so the cut
    answer ends ``incomplete`` and a fresh upstream session carries the talk on."""
    async with (
        reference("duplex-no-barge-in", reply_ms=3000) as up,
        reference("duplex-no-barge-in", reply_ms=3000) as restarted,
        tcp_link(up) as link,
        proxy(proxy_config({"m": link.url(up)})) as base,
        connect(ws_url(base)) as c,
    ):
        s = await created(c)
        await c.send({"type": "session.update", "session": {"instructions": "be brief"}})
        await speak(c)
        await until_deltas(c, 3)
        rid = c.of("response.created")[-1]["response"]["id"]
        link.target = host_port(restarted)
        link.cut()
        cut_at = len(c.events)
        done = await cut_answer_ends(c, rid)
        assert done["response"]["status_details"]["error"]["code"] == "upstream_lost"
        await answered(c)
        assert await reattached(base) == {"fresh": 1}
        # The fresh upstream session got the client's settings back, and the talk so far.
        # A GA client is answered session.update by the proxy, never by the upstream: its
        # settings stand as the proxy told it, and the fresh session's own answer is not
        # relayed to it.
        told = [e for e in c.events[:cut_at] if e["type"] == "session.updated"]
        assert told and told[-1]["session"]["instructions"] == "be brief"
        assert not [e for e in c.events[cut_at:] if e["type"] == "session.updated"]
        said = [e["item"] for e in c.events[:cut_at] if e["type"] == "conversation.item.done"]
        first_user = next(i for i in said if i["role"] == "user")
        await c.send({"type": "conversation.item.retrieve", "item_id": first_user["id"]})
        got = await c.until("conversation.item.retrieved")
        assert got["item"]["id"] == first_user["id"]
        assert got["item"]["role"] == "user"
        s.take(c)
        s.assert_exactly_once()
