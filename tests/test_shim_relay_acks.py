"""The barge-in relay's acks in flight: each upstream answer reaches whoever asked.

vLLM-Omni answers a ``playback.ack`` with ``playback.acknowledged`` or a refusal;
it refuses a ``conversation.item.truncate`` it cannot take (``item_not_found``,
``bad_event``) with no ack answer at all (``shim/dialects/relay_reports.py``).
"""

from __future__ import annotations

import json

from proxy.emulated.upstream_redial import Outbox
from shim.actions import NoteUpstreamError, SendClient
from shim.inputs import UpstreamLost, UpstreamReattached
from tests.duplex_relay_script import (
    AID,
    RID,
    UP,
    acks,
    audio_delta,
    make,
    relay,
    start_response,
)
from tests.shim_script import Script, upstream_events


def refusal(code: str, message: str) -> dict:  # type: ignore[type-arg]
    return {
        "type": "error",
        "error": {"type": "invalid_request_error", "code": code, "message": message},
    }


TOO_LATE = refusal(
    "playback_ack_too_late", "playback.ack arrived after a later user input was committed."
)


def to_client(out: list) -> bool:  # type: ignore[type-arg]
    return any(isinstance(a, SendClient) and a.event["type"] == "error" for a in out)


def kept(out: list) -> bool:  # type: ignore[type-arg]
    return any(isinstance(a, NoteUpstreamError) for a in out) and not to_client(out)


def play_response(sc: Script, rid: str, deltas: int) -> None:
    """A response still being generated: cutting it acks what was heard."""
    sc.upstream({"type": "response.created", "response": {"id": rid}})
    for _ in range(deltas):
        sc.upstream(audio_delta(rid))


def truncate(item_id: str, end: int) -> dict:  # type: ignore[type-arg]
    return {
        "type": "conversation.item.truncate",
        "item_id": item_id,
        "content_index": 0,
        "audio_end_ms": end,
    }


def test_a_refused_truncate_leaves_no_ack_in_flight() -> None:
    sc = make(truncates=True)
    start_response(sc, chunks=5)
    sc.upstream({"type": "response.done", "response": {"id": RID, "status": "completed"}})
    assert upstream_events(sc.client(truncate(AID, 400)))
    bad = refusal(
        "bad_event", "conversation.item.truncate audio_end_ms exceeds item audio duration"
    )
    assert to_client(sc.upstream(bad)), "the client's truncate, refused"
    play_response(sc, "resp-2", deltas=20)
    assert acks(sc.speak([0.9] * 10)), "the proxy's cut says what was heard"
    assert kept(sc.upstream(TOO_LATE)), "the refusal of the proxy's own ack"
    sc.client({"type": "playback.ack", "played_ms": 10, "response_id": "resp-2"})
    assert to_client(sc.upstream(TOO_LATE)), "the client's own ack, refused"


def test_an_ack_refusal_that_names_its_response_is_matched_by_it() -> None:
    sc = make()
    play_response(sc, "resp-2", deltas=20)
    assert acks(sc.speak([0.9] * 10))  # the proxy's ack of resp-2, in flight
    sc.client({"type": "playback.ack", "played_ms": 10, "response_id": "resp-9"})
    named = refusal(
        "playback_item_not_found", "No assistant response item is registered for resp-9."
    )
    # The answer to the proxy's ack went unrecognised; the client's is named.
    assert to_client(sc.upstream(named)), "the client's ack, though the proxy's went first"
    assert to_client(sc.upstream(TOO_LATE)), "answered in order: none of the proxy's left"


def test_the_ack_alias_is_an_ack_in_flight_too() -> None:
    sc = make()
    play_response(sc, "resp-2", deltas=20)
    sc.client({"type": "audio.playback_ack", "played_ms": 10, "response_id": "resp-2"})
    assert acks(sc.speak([0.9] * 10))  # the proxy's cut, after the client's ack
    assert to_client(sc.upstream(TOO_LATE)), "the first answer is the client's"
    assert kept(sc.upstream(TOO_LATE))


def test_a_truncate_of_an_earlier_upstream_sessions_item_stays_here() -> None:
    sc = make(truncates=True)
    start_response(sc, chunks=5)
    sc.upstream({"type": "response.done", "response": {"id": RID, "status": "completed"}})
    sc.tick(2000)
    sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    fresh = {"type": "session.created", "session": {"id": "duplex-up-2"}, "resume_token": "t"}
    sc.s.handle(UpstreamReattached(fresh, sc.now))
    out = sc.client(truncate(AID, 50))
    assert not upstream_events(out), "the fresh upstream session never had it"
    assert "conversation.item.truncated" in [
        e.event["type"] for e in out if isinstance(e, SendClient)
    ]


def test_many_acks_in_flight_are_all_told_apart() -> None:
    sc = make()
    play_response(sc, "resp-2", deltas=20)
    for _ in range(40):
        sc.client({"type": "playback.ack", "played_ms": 10, "response_id": "resp-2"})
    assert acks(sc.speak([0.9] * 10))
    for _ in range(40):
        assert to_client(sc.upstream(TOO_LATE))
    assert kept(sc.upstream(TOO_LATE)), "the proxy's, the 41st"


def test_a_truncate_past_the_proxys_cut_is_answered_at_the_cut_and_leaves_nothing_in_flight() -> (
    None
):
    # The client truncates past the proxy's own cut; the upstream is sent the cut and
    # answers at it. That answer must take the truncate's entry, so that a later
    # refusal of the proxy's own ack is still kept from the client.
    sc = make(truncates=True)
    play_response(sc, "resp-2", deltas=40)
    ack = next(e for e in upstream_events(sc.speak([0.9] * 10)) if e["type"] == "playback.ack")
    cut = ack["played_ms"]
    sc.client(truncate("item_resp-2", cut + 100))
    answer = {"type": "playback.acknowledged", "item_id": "item_resp-2", "played_ms": cut}
    sc.upstream({**answer, "committed_ms": cut})
    sc.upstream({**answer, "committed_ms": cut, "truncate": True})
    sc.speak([0.05] * 40)  # the user's turn ends
    play_response(sc, "resp-3", deltas=40)
    assert acks(sc.speak([0.9] * 10)), "the proxy's second cut says what was heard"
    assert kept(sc.upstream(TOO_LATE)), "the refusal of the proxy's own ack"


RESUMED = {"type": "session.resumed", "session_id": UP, "resume_token": "tok-2"}


def test_the_acks_in_flight_move_with_the_session_to_another_replica() -> None:
    """A move that resumes the same upstream session: its replay answers the acks in
    flight at the snapshot, in order, so the snapshot holds them."""
    sc = make()
    play_response(sc, "resp-2", deltas=20)
    assert acks(sc.speak([0.9] * 10)), "the proxy's ack of what was heard, in flight"
    moved = make(bound=False)
    relay(moved).restore(sc.s.snapshot(), RESUMED, now=sc.now)
    assert kept(moved.upstream(TOO_LATE)), "the refusal of the old owner's ack stays here"
    moved.client({"type": "playback.ack", "played_ms": 10, "response_id": "resp-2"})
    assert to_client(moved.upstream(TOO_LATE)), "the client's own ack, refused"


def test_an_ack_dropped_during_an_upstream_redial_is_no_longer_awaited() -> None:
    sc = make()
    play_response(sc, "resp-2", deltas=20)
    sent = acks(sc.speak([0.9] * 10))
    assert sent, "the proxy's ack of what was heard"
    sc.s.handle(UpstreamLost("socket closed", sc.now))
    # Its own session back; the ack, held for the new socket, was dropped on the way.
    sc.s.handle(UpstreamReattached(RESUMED, sc.now, unsent=(sent[0],)))
    sc.client({"type": "playback.ack", "played_ms": 10, "response_id": "resp-2"})
    assert to_client(sc.upstream(TOO_LATE)), "the client's ack, not the dropped one"


def test_the_redial_outbox_keeps_the_playback_reports_it_drops() -> None:
    """The edge's half (``proxy/emulated/upstream_redial.py``): what the shim is told
    with the new socket (``UpstreamReattached.unsent``)."""
    ack = {"type": "playback.ack", "played_ms": 480, "response_id": "resp-2"}
    cut = truncate(AID, 400)
    box = Outbox(limit=200)
    assert box.hold(json.dumps(cut))
    assert not box.hold(json.dumps(ack) + " " * 120)  # over the bound: dropped
    assert not box.hold('{"type": "input_audio_buffer.append", "audio": "' + "A" * 200 + '"}')
    assert box.unsent == [ack]
    again = Outbox.replacing(box, limit=200)  # a second resume: what was held is dropped
    assert again.unsent == [ack, cut] and not again.frames


def test_an_ack_without_played_ms_is_refused_upstream_and_awaits_no_ack_answer() -> None:
    """vLLM-Omni 0.30.0 refuses it (``bad_event``, "playback.ack requires numeric
    played_ms", its ``realtime_commands.translate_realtime_command``), as the proxy
    does: it is no ack, so nothing waits in flight for it."""
    sc = make()
    play_response(sc, "resp-2", deltas=20)
    assert acks(sc.speak([0.9] * 10)), "the proxy's ack of what was heard, in flight"
    bare = {"type": "playback.ack", "response_id": "resp-2"}
    assert upstream_events(sc.client(bare)) == [bare], "refused there, in its own words"
    bad = refusal("bad_event", "playback.ack requires numeric played_ms")
    assert to_client(sc.upstream(bad)), "the client's, refused"
    assert kept(sc.upstream(TOO_LATE)), "the proxy's own ack is still the one awaited"


def test_a_report_made_mid_redial_does_not_move_as_in_flight() -> None:
    """A snapshot while the upstream is lost: the proxy's ack made meanwhile may sit in
    the old owner's outbox, never sent. The new owner awaits no answer to it, so the
    refusal of the client's own ack that follows reaches the client."""
    sc = make()
    play_response(sc, "resp-2", deltas=20)
    sc.s.handle(UpstreamLost("socket closed", sc.now))  # resuming its own session
    assert acks(sc.speak([0.9] * 10)), "the proxy's ack, for the outbox"
    moved = make(bound=False)
    relay(moved).restore(sc.s.snapshot(), RESUMED, now=sc.now)
    moved.client({"type": "playback.ack", "played_ms": 10, "response_id": "resp-2"})
    assert to_client(moved.upstream(TOO_LATE)), "the client's own ack, refused"


def test_a_report_sent_once_the_upstream_is_back_moves_as_in_flight() -> None:
    sc = make()
    play_response(sc, "resp-2", deltas=20)
    sc.s.handle(UpstreamLost("socket closed", sc.now))
    assert acks(sc.speak([0.9] * 10))
    sc.s.handle(UpstreamReattached(RESUMED, sc.now))  # the outbox went out
    moved = make(bound=False)
    relay(moved).restore(sc.s.snapshot(), RESUMED, now=sc.now)
    assert kept(moved.upstream(TOO_LATE)), "the refusal of the old owner's ack stays here"


def test_a_native_clients_ack_made_while_the_upstream_was_lost_is_answered_by_the_fresh_one() -> (
    None
):
    """vLLM-Omni 0.30.0 answers every ``playback.ack``: one naming a response the
    session does not have is refused (``playback_item_not_found``, its
    ``engine/duplex/session/playback_ledger.py``). The edge gives a fresh upstream
    session none of the outbox's reports, so the relay sends the client's again."""
    sc = make()
    play_response(sc, "resp-2", deltas=20)
    sc.s.handle(UpstreamLost("socket closed", sc.now))
    ack = {"type": "playback.ack", "played_ms": 200, "response_id": "resp-2"}
    assert upstream_events(sc.client(ack)), "for the outbox"
    sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    fresh = {"type": "session.created", "session": {"id": "duplex-up-2"}, "resume_token": "t"}
    sent = upstream_events(sc.s.handle(UpstreamReattached(fresh, sc.now)))
    again = [e for e in sent if e["type"] == "playback.ack"]
    assert len(again) == 1 and again[0]["response_id"] == "resp-2"
    not_found = refusal(
        "playback_item_not_found", "No assistant response item is registered for resp-2."
    )
    assert to_client(sc.upstream(not_found)), "the client's ack, answered"
