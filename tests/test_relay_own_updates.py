"""A native client over a fresh upstream session is never told the answers to the
proxy's own opening and updates of it (``shim/dialects/relay_own_updates.py``).

vLLM-Omni answers an opening and each update with ``session.updated`` (its
``engine/duplex/realtime_events.py``, ``initial_session_update``; ``control.py``,
``on_session_update``) and never sends one unasked. After a move the relay gives the
fresh upstream the kept ``playback_commit_policy`` by an update of its own
(``relay_kept_update.not_opened``), after a loss the client's settings
(``relay_kept_update.given``): their answers, and the opening's, are the proxy's.
"""

from __future__ import annotations

from typing import Any

import pytest

from proxy.reference import ReferenceOptions
from shim.actions import Action, SendClient
from shim.inputs import UpstreamLost, UpstreamReattached
from tests.duplex_relay_script import make
from tests.native_client_session import NATIVE, opening
from tests.relay_kept_updates import updated
from tests.resume_client import until_fresh_upstream
from tests.servers import connect, host_port, proxy, proxy_config, reference, tcp_link, ws_url
from tests.shim_script import Script, upstream_events

pytestmark = pytest.mark.timeout(60)

FRESH = {"type": "session.created", "session": {"id": "up-2"}, "resume_token": "t"}


def answer(seq: int, **session: Any) -> dict[str, Any]:
    return {
        "type": "session.updated",
        "session": {"id": "up-2", **session},
        "server_event_seq": seq,
    }


def told(actions: list[Action]) -> list[dict[str, Any]]:
    return [a.event for a in actions if isinstance(a, SendClient)]


def moved() -> tuple[Script, list[Action]]:
    sc = make()
    updated(sc, {"playback_commit_policy": "commit_all_on_done", "instructions": "x"})
    m = make(bound=False)
    out = m.s.restore(sc.s.snapshot())
    m.s.bind_upstream(FRESH)
    return m, out


def test_the_answers_to_a_moves_own_opening_and_update_are_not_relayed() -> None:
    m, out = moved()
    [sent] = [e for e in upstream_events(out) if e["type"] == "session.update"]
    assert sent["session"] == {"playback_commit_policy": "commit_all_on_done"}
    assert not told(m.upstream(answer(1))), "the opening's answer"
    policy = answer(2, playback_commit_policy="commit_all_on_done")
    assert not told(m.upstream(policy)), "the answer to the proxy's own update"
    # the client's own update is answered to the client
    assert [e["type"] for e in upstream_events(m.client(_update("y")))] == ["session.update"]
    assert [e["type"] for e in told(m.upstream(answer(3, instructions="y")))] == ["session.updated"]


def test_the_answers_to_a_losss_own_opening_and_update_are_not_relayed() -> None:
    sc, sent = _fresh_with_one_due()  # the fresh opening's answer not told
    assert not told(sc.upstream(answer(2, voice="alloy"))), "the answer to the settings"
    assert sent["event_id"].startswith("proxy_")


def test_an_upstream_that_answers_no_opening_still_answers_the_client() -> None:
    """The opening's answer is told by its place and its object (the ``session.created``
    one): an upstream sending none costs the client none of its own answers."""
    m, _ = moved()
    assert not told(m.upstream(answer(1, playback_commit_policy="commit_all_on_done")))
    m.client(_update("y"))
    assert told(m.upstream(answer(2, instructions="y")))


def test_a_refusal_of_the_proxys_own_update_is_told_in_its_words() -> None:
    m, out = moved()
    [sent] = [e for e in upstream_events(out) if e["type"] == "session.update"]
    assert not told(m.upstream(answer(1)))
    refusal = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "code": "invalid_playback_commit_policy",
            "message": "bad policy",
            "event_id": sent["event_id"],
        },
        "server_event_seq": 2,
    }
    [error] = told(m.upstream(refusal))
    assert error["error"]["code"] == "invalid_playback_commit_policy"
    assert "event_id" not in error["error"], "the proxy's own id means nothing to the client"
    assert "settings" in error["error"]["message"] and "bad policy" in error["error"]["message"]
    # nothing more is due: the client's next update is answered to it
    m.client(_update("z"))
    assert told(m.upstream(answer(3, instructions="z")))


def _update(instructions: str) -> dict[str, Any]:
    return {"type": "session.update", "session": {"instructions": instructions}}


async def test_a_native_client_hears_no_answer_to_the_fresh_upstreams_opening() -> None:
    """Through the proxy: a restarted upstream (no resume) gets a fresh session with
    the client's settings; the client hears only the answer to its own next update."""
    options = ReferenceOptions(fidelity="strict")
    async with (
        reference("duplex-no-barge-in", options=options) as up,
        reference("duplex-no-barge-in", options=options) as restarted,
        tcp_link(up) as link,
        proxy(proxy_config({"m": link.url(up)})) as base,
        connect(ws_url(base, **NATIVE)) as c,
    ):
        await c.send(opening())
        await c.until("session.created")
        await c.send(_update("be brief"))
        await c.until("session.updated")
        link.target = host_port(restarted)
        link.cut()
        cut_at = len(c.events)
        await until_fresh_upstream(base)
        await c.send(_update("after"))
        got = await c.until("session.updated", timeout=15)
        assert got["session"]["instructions"] == "after", got
        await c.send(_update("again"))
        assert (await c.until("session.updated", timeout=15))["session"]["instructions"] == "again"
        updates = [e for e in c.events[cut_at:] if e["type"] == "session.updated"]
        assert [e["session"]["instructions"] for e in updates] == ["after", "again"], updates
        assert not [e for e in c.events[cut_at:] if e["type"] == "error"], c.events[cut_at:]


RESUMED = {"type": "session.resumed", "session": {"id": "up-2"}, "resume_token": "t"}


def _fresh_with_one_due() -> tuple[Script, dict[str, Any]]:
    """After a loss: a fresh upstream session, its opening answered, the proxy's
    update of it still unanswered."""
    sc = make()
    updated(sc, {"voice": "alloy"})
    out = sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    [sent] = [e for e in upstream_events(out) if e["type"] == "session.update"]
    sc.s.handle(UpstreamReattached(FRESH, sc.now))
    assert not told(sc.upstream(answer(1))), "the fresh opening's answer"
    return sc, sent


def test_a_move_that_resumes_the_upstream_still_counts_the_proxys_answers_off() -> None:
    """The answers still due go into the snapshot: the replica that resumes the
    upstream's session tells the client neither the answer nor a refusal with the
    proxy's event id."""
    sc, sent = _fresh_with_one_due()
    snap = sc.s.snapshot()
    m = make(bound=False)
    m.s.restore(snap, resumed=RESUMED)
    assert not told(m.upstream(answer(2, voice="alloy"))), "the answer to the proxy's update"
    assert [e["type"] for e in told(m.upstream(answer(3, voice="x")))] == ["session.updated"]
    r = make(bound=False)
    r.s.restore(snap, resumed=RESUMED)
    error = {"type": "invalid_request_error", "code": "x", "message": "bad"}
    refusal = {"type": "error", "error": {**error, "event_id": sent["event_id"]}}
    [err] = told(r.upstream({**refusal, "server_event_seq": 2}))
    assert "event_id" not in err["error"] and err["error"]["code"] == "x"
    # A snapshot from before the field existed still loads (no answers due).
    old = {k: v for k, v in snap.items() if k != "own_updates"}
    o = make(bound=False)
    o.s.restore(old, resumed=RESUMED)
    assert o.s.own_updates.due == 0


def test_a_resume_sends_the_proxys_unanswered_update_again() -> None:
    """The socket dropped before the upstream read the proxy's update, and its
    session is resumed: the update goes again, and the client's own next answer
    reaches it."""
    sc, sent = _fresh_with_one_due()
    out = sc.s.handle(UpstreamLost("socket dropped", sc.now, resume=True))
    assert [type(a).__name__ for a in out] == ["ResumeUpstream"]
    again = upstream_events(sc.s.handle(UpstreamReattached(RESUMED, sc.now)))
    assert [e["session"] for e in again] == [sent["session"]]
    assert again[0]["event_id"] != sent["event_id"]
    assert not told(sc.upstream(answer(2, voice="alloy"))), "the answer to the update sent again"
    sc.client(_update("y"))
    assert [e["type"] for e in told(sc.upstream(answer(3, instructions="y")))] == [
        "session.updated"
    ]
