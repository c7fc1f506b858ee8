"""The typed, versioned session snapshot: wire form, old stored snapshots, edge readers."""

from __future__ import annotations

import pytest

from shim.dialects.duplex_relay import BargeInRelaySession
from shim.dialects.turn_based import TurnBasedSession
from shim.session import ShimSettings
from shim.snapshot import (
    SNAPSHOT_VERSION,
    SessionSnapshot,
    SnapshotError,
    SnapshotVersionError,
    opening_session,
    upstream_binding,
    upstream_position,
)
from tests.shim_script import client_events

SETTINGS = ShimSettings(echo_suppression=False)

# A turn-based session's snapshot as stored before snapshots had a version.
OLD_TURN = {
    "counter": 7,
    "last_item_id": "item_x000007",
    "input_format": ["pcm16", 16000],
    "output_format": ["pcm16", 24000],
    "turn_detection": {
        "type": "server_vad",
        "threshold": 0.6,
        "prefix_padding_ms": 200,
        "silence_duration_ms": 400,
        "create_response": True,
        "interrupt_response": True,
        "idle_timeout_ms": None,
    },
    "instructions": "be brief",
    "open_response": {"response_id": "resp_1", "item_id": "item_2", "sent_ms": 480},
}
# ... and a barge-in relay's, mid-response, with its upstream session.
OLD_RELAY = {
    **OLD_TURN,
    "open_response": {
        "response_id": "resp-up-1",
        "item_id": "item_resp-up-1",
        "sent_ms": 300,
        "transcript": "hello there",
    },
    "upstream_update": {"type": "session.update", "session": {"instructions": "be brief"}},
    "upstream": {"id": "up-1", "token": "tok-1", "seq": 42},
    "cancelled": ["resp-old"],
    "history": [["item_u1", "user", "hi"]],
    "restoring": [],
    "suppress_upstream_speech": False,
    "playback_reports": {
        "client_acks": False,
        "proxy_acked": True,
        "upstream_audio_ms": 300.0,
        "end_reported": False,
        "playing": None,
    },
}


def turn() -> TurnBasedSession:
    return TurnBasedSession("sess_0123456789abcdef", "demo", "demo-up", SETTINGS)


def relay() -> BargeInRelaySession:
    return BargeInRelaySession("sess_0123456789abcdef", "m", SETTINGS, {})


def test_the_wire_form_round_trips_and_carries_its_version() -> None:
    for old in (OLD_TURN, OLD_RELAY):
        snap = SessionSnapshot.from_wire(old)
        wire = snap.to_wire()
        assert wire["version"] == SNAPSHOT_VERSION
        assert SessionSnapshot.from_wire(wire) == snap
        assert {k: v for k, v in wire.items() if k != "version"}.keys() >= old.keys()
    assert SessionSnapshot.from_wire(OLD_TURN).relay is None


def test_a_turn_based_snapshot_stored_by_the_old_code_restores() -> None:
    s = turn()
    out = s.restore(OLD_TURN)
    (done,) = [e for e in client_events(out) if e["type"] == "response.done"]
    assert done["response"]["id"] == "resp_1"
    assert done["response"]["status_details"]["error"]["code"] == "upstream_lost"
    assert s.config.input_format.rate_hz == 16000 and s.config.instructions == "be brief"
    assert s.config.turn.vad is not None and s.config.turn.vad.threshold == 0.6
    assert s.new_id("item").endswith("000008"), "ids go on from the snapshot's counter"
    assert s.snapshot()["last_item_id"] == "item_x000007"


def test_a_relay_snapshot_stored_by_the_old_code_resumes_its_upstream_session() -> None:
    s = relay()
    resumed = {"type": "session.resumed", "session_id": "up-1", "resume_token": "tok-2"}
    assert not s.restore(OLD_RELAY, resumed, now=1000.0), "it carries on: nothing ends"
    assert s.response is not None and s.response.response_id == "resp-up-1"
    assert s.upstream_position() == ("up-1", 42)
    snap = s.snapshot()
    assert upstream_binding(snap) == ("up-1", "tok-2", 42)
    assert snap["open_response"]["transcript"] == "hello there"
    assert snap["history"] == [["item_u1", "user", "hi"]]


@pytest.mark.parametrize("version", [0, 2, "1", None])
def test_an_unknown_version_is_refused_with_a_clear_exception(version: object) -> None:
    stored = {**OLD_RELAY, "version": version}
    with pytest.raises(SnapshotVersionError, match="version") as info:
        SessionSnapshot.from_wire(stored)
    assert info.value.version == version
    with pytest.raises(SnapshotVersionError):
        relay().restore(stored)
    with pytest.raises(SnapshotVersionError):
        turn().restore(stored)


def test_a_malformed_snapshot_is_refused_as_such() -> None:
    with pytest.raises(SnapshotError, match="malformed"):
        SessionSnapshot.from_wire({"counter": 1})
    with pytest.raises(SnapshotError, match="malformed"):
        SessionSnapshot.from_wire({**OLD_TURN, "input_format": "pcm16"})


def test_what_the_edge_reads_it_reads_through_shim_functions() -> None:
    assert upstream_position(OLD_RELAY) == ("up-1", 42)
    assert upstream_binding(OLD_RELAY) == ("up-1", "tok-1", 42)
    assert opening_session(OLD_RELAY) == {"instructions": "be brief"}
    assert upstream_position(OLD_TURN) is None and upstream_binding(OLD_TURN) is None
    assert opening_session(OLD_TURN) == {"instructions": "be brief"}
    unresumable = {**OLD_RELAY, "upstream": {"id": "up-1", "token": None, "seq": 3}}
    assert upstream_position(unresumable) == ("up-1", 3)
    assert upstream_binding(unresumable) is None
    assert opening_session({**OLD_TURN, "instructions": None}) is None
