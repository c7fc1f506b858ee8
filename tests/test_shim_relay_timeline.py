"""The barge-in relay keeps the upstream's speech times on the client's timeline across
a fresh upstream session and a move (``shim/upstream_timeline.py``)."""

from __future__ import annotations

from typing import Any

from proxy.emulated.shim_setup import keep_opened_with
from shim.actions import SendClient
from shim.inputs import UpstreamLost, UpstreamReattached
from tests.duplex_relay_script import make, relay
from tests.shim_script import Script, upstream_events

STARTED = "input_audio_buffer.speech_started"
FRESH = {"type": "session.created", "session": {"id": "up-2"}, "resume_token": "t2"}
RESUMED = {"type": "session.resumed", "session": {"id": "up-2"}, "resume_token": "t2"}


def told_start(sc: Script, ms: int, seq: int) -> Any:
    ev = {"type": STARTED, "audio_start_ms": ms, "item_id": "i", "server_event_seq": seq}
    told = [a.event for a in sc.upstream(ev) if isinstance(a, SendClient)]
    assert [e["type"] for e in told] == [STARTED], told
    return told[0]["audio_start_ms"]


def test_a_fresh_session_after_a_failed_resume_and_then_a_move_keep_the_clients_timeline() -> None:
    sc = make()
    sc.audio(2000)  # heard by the first upstream session
    sc.s.handle(UpstreamLost("socket closed", sc.now))  # a resume is tried
    sc.audio(500)  # held for it; carried to the fresh session when it fails
    sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    sc.s.handle(UpstreamReattached(FRESH, sc.now))
    sc.audio(1000)
    assert told_start(sc, 700, 1) == 2700  # the fresh session counts from zero
    moved = make(bound=False)
    relay(moved).restore(sc.s.snapshot(), RESUMED, now=sc.now)
    assert told_start(moved, 900, 2) == 2900  # replayed: audio from before the move
    moved.audio(1000)  # the client's timeline starts again after the move
    assert told_start(moved, 1800, 3) == 300


def test_a_move_to_a_fresh_upstream_session_counts_from_zero() -> None:
    sc = make()
    sc.audio(2000)
    moved = make(bound=False)
    relay(moved).restore(sc.s.snapshot(), None, now=sc.now)
    relay(moved).bind_upstream(FRESH)
    moved.audio(1000)
    assert told_start(moved, 400, 1) == 400


def test_a_native_update_naming_turn_detection_restarts_the_upstreams_clock() -> None:
    sc = make()
    sc.audio(2000)
    update = {"type": "session.update", "session": {"turn_detection": {"type": "server_vad"}}}
    assert [e["type"] for e in upstream_events(sc.client(update))] == ["session.update"]
    sc.audio(1000)
    assert told_start(sc, 300, 1) == 2300  # the upstream's fresh detector counts from zero


def test_an_update_the_upstream_refuses_leaves_its_clock_as_it_was() -> None:
    sc = make()
    sc.audio(2000)
    update = {"type": "session.update", "session": {"turn_detection": {"type": "semantic_vad"}}}
    assert [e["type"] for e in upstream_events(sc.client(update))] == ["session.update"]
    sc.audio(1000)
    assert told_start(sc, 2300, 1) == 2300  # vLLM-Omni refused it whole: the same detector


def test_without_turn_detection_the_upstream_echoes_the_clients_own_append_hints() -> None:
    """vLLM-Omni with turn detection off marks a buffer's first append with the
    client's own ``audio_start_ms`` hint (``realtime_events.py``, ``note_input_append``):
    the client's value, not a time on the upstream's timeline."""
    sc = make()
    sc.audio(2000)
    sc.s.handle(UpstreamLost("socket closed", sc.now))
    sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    sc.s.handle(UpstreamReattached(FRESH, sc.now))  # its clock starts at the client's 2 s
    update = {"type": "session.update", "session": {"turn_detection": None}}
    assert [e["type"] for e in upstream_events(sc.client(update))] == ["session.update"]
    sc.audio(1000)
    assert told_start(sc, 2100, 1) == 2100


def test_the_native_opening_sets_the_upstreams_padding() -> None:
    """The session the upstream opened with (never an update through the relay) sets
    the padding its detector runs with."""
    sc = make()
    opened = {"model": "m", "turn_detection": {"type": "server_vad", "prefix_padding_ms": 0}}
    keep_opened_with(sc.s, opened)
    assert relay(sc).upstream_timeline.padding_ms == 0


def test_a_native_session_opened_without_turn_detection_keeps_the_clients_hints() -> None:
    """Opened without turn detection, vLLM-Omni has no detector (``session/control.py``,
    ``init_turn_detection``): its speech_started carries the placeholder 0."""
    sc = make()
    keep_opened_with(sc.s, {"model": "m"})
    sc.audio(2000)
    sc.s.handle(UpstreamLost("socket closed", sc.now))
    sc.s.handle(UpstreamLost("resume refused", sc.now, resume=False))
    sc.s.handle(UpstreamReattached(FRESH, sc.now))  # its clock starts at the client's 2 s
    sc.audio(1000)
    assert told_start(sc, 0, 1) == 0


def test_an_update_refused_upstream_for_a_reason_the_relay_does_not_foresee() -> None:
    """vLLM-Omni refuses an update whole when it changes the instructions once the
    context is locked (``session/control.py``, ``on_session_update``): its error names
    the update, and the detector, its clock and its padding stay."""
    sc = make()
    sc.audio(2000)
    td = {"type": "server_vad", "prefix_padding_ms": 0}
    update = {
        "type": "session.update",
        "event_id": "u1",
        "session": {"instructions": "new", "turn_detection": td},
    }
    assert [e["type"] for e in upstream_events(sc.client(update))] == ["session.update"]
    err = {"code": "instructions_update_unsupported", "message": "no", "event_id": "u1"}
    sc.upstream({"type": "error", "server_event_seq": 1, "error": err})
    sc.audio(1000)
    assert relay(sc).upstream_timeline.padding_ms == 300
    assert told_start(sc, 2300, 2) == 2300


def test_an_update_the_upstream_took_is_not_undone_by_a_later_error() -> None:
    sc = make()
    sc.audio(2000)
    update = {
        "type": "session.update",
        "event_id": "u1",
        "session": {"turn_detection": {"type": "server_vad"}},
    }
    sc.client(update)
    sc.upstream({"type": "session.updated", "server_event_seq": 1, "session": {}})
    err = {"code": "x", "message": "no", "event_id": "u1"}
    sc.upstream({"type": "error", "server_event_seq": 2, "error": err})
    sc.audio(1000)
    assert told_start(sc, 300, 3) == 2300  # the fresh detector counts from zero
