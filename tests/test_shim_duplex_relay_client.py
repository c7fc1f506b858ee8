"""barge_in_emulated by script: what the client hears and sends: audio at its rate, ordinary
turns left to the upstream, the proxy's own barge-in, session.update and unknown events
passed upstream, and truncates (as a playback ack, or at the proxy's cut)."""

from __future__ import annotations

import pybase64
import pytest

from shim.actions import ForwardUpstream
from tests.duplex_relay_script import AID, RID, make, start_response
from tests.shim_script import client_events, pcm_b64, types, upstream_events


def test_audio_is_resampled_to_the_clients_rate() -> None:
    sc = make()
    out = start_response(sc, chunks=10, rate=22050)
    deltas = [e for e in client_events(out) if e["type"] == "response.output_audio.delta"]
    n = sum(len(pybase64.b64decode(d["delta"])) // 2 for d in deltas)
    assert abs(n - 24000) < 2400
    assert all(d["sample_rate_hz"] == 24000 for d in deltas)


def test_ordinary_turns_are_left_to_the_upstream() -> None:
    sc = make()
    out = sc.speak([0.9] * 20 + [0.05] * 20)
    assert not [t for t in types(out) if t.startswith("input_audio_buffer.speech")]
    appends = [e for e in upstream_events(out) if e["type"] == "input_audio_buffer.append"]
    assert len(appends) == 40, "client audio is forwarded as it comes"


def test_barge_in_cancels_upstream_and_drops_the_rest_of_the_response() -> None:
    sc = make()
    start_response(sc, chunks=10)
    out = sc.speak([0.9] * 10)
    t = types(out)
    assert t[0] == "input_audio_buffer.speech_started"
    done = next(e for e in client_events(out) if e["type"] == "response.done")
    assert done["response"]["status"] == "cancelled"
    assert done["response"]["status_details"]["reason"] == "turn_detected"
    truncated = next(e for e in client_events(out) if e["type"] == "conversation.item.truncated")
    assert truncated["item_id"] == AID
    up = [e["type"] for e in upstream_events(out) if e["type"] != "input_audio_buffer.append"]
    assert up == ["playback.ack", "output_audio_buffer.clear"]
    later = sc.upstream(
        {
            "type": "response.output_audio.delta",
            "response_id": RID,
            "item_id": AID,
            "delta": pcm_b64(100, 22050),
            "sample_rate_hz": 22050,
        }
    )
    later += sc.upstream({"type": "response.done", "response": {"id": RID, "status": "cancelled"}})
    assert not client_events(later), "the upstream's own end of a cut response is not repeated"


def test_session_update_goes_upstream_with_turn_detection() -> None:
    """A strict upstream detects turns only under server_vad: the client's choice reaches
    it, and the proxy's own VAD (for barge-ins) follows it too."""
    sc = make()
    out = sc.client(
        {
            "type": "session.update",
            "session": {
                "type": "realtime",
                "instructions": "be brief",
                "audio": {
                    "input": {"turn_detection": {"type": "server_vad", "silence_duration_ms": 300}}
                },
            },
        }
    )
    (forwarded,) = upstream_events(out)
    assert forwarded["session"]["instructions"] == "be brief"
    assert forwarded["session"]["audio"]["input"]["turn_detection"]["type"] == "server_vad"
    assert sc.s.config.turn.vad is not None and sc.s.config.turn.vad.silence_duration_ms == 300


def test_truncate_without_upstream_support_becomes_a_playback_ack() -> None:
    sc = make(truncates=False)
    start_response(sc, chunks=3)
    out = sc.upstream({"type": "response.done", "response": {"id": RID, "status": "completed"}})
    assert types(out) == ["response.done"]
    out = sc.client(
        {
            "type": "conversation.item.truncate",
            "item_id": AID,
            "content_index": 0,
            "audio_end_ms": 120,
        }
    )
    assert "conversation.item.truncated" in types(out)
    (ack,) = upstream_events(out)
    assert ack["type"] == "playback.ack" and ack["played_ms"] == 120


@pytest.mark.parametrize("kind", ["vendor.custom", "other", "response.create"])
def test_unknown_client_events_pass_through_untouched(kind: str) -> None:
    sc = make()
    out = sc.client({"type": kind, "x": [1, 2]})
    assert len(out) == 1 and isinstance(out[0], ForwardUpstream)
    assert f'"{kind}"' in out[0].raw
    assert sc.client({"type": "playback.ack", "played_ms": 10})  # the session goes on


@pytest.mark.parametrize("truncates", [True, False])
def test_a_truncate_past_the_proxys_cut_goes_upstream_at_the_cut(truncates: bool) -> None:
    # A GA client stops playing on the proxy's speech_started and truncates where it
    # stopped, often past the cut the proxy made and told: the client is told that cut
    # again, and the upstream must hear the same point, not the client's larger one.
    sc = make(truncates=truncates)
    start_response(sc, chunks=20)
    sc.tick(400)
    sc.speak([0.9] * 10)
    item = sc.s.ledger.get(AID)
    assert item is not None and item.told_by == "proxy" and item.truncated_ms is not None
    cut = item.truncated_ms
    ev = {"type": "conversation.item.truncate", "item_id": AID, "content_index": 0}
    out = sc.client({**ev, "audio_end_ms": cut + 300})
    told = [e["audio_end_ms"] for e in client_events(out) if e["type"].endswith("truncated")]
    assert told == [cut]
    heard = [e.get("audio_end_ms", e.get("played_ms")) for e in upstream_events(out)]
    assert heard and all(ms == cut for ms in heard)
