"""barge_in_emulated by script: relay, renumbering, and the proxy's own barge-in."""

from __future__ import annotations

import pybase64

from shim.actions import ForwardUpstream
from shim.dialects.duplex_relay import BargeInRelaySession
from shim.session import ShimSettings
from shim.vad_gate import VadParams
from tests.shim_script import Script, client_events, pcm_b64, types, upstream_events

RID = "resp-duplex-1-0-abcd1234"
AID = f"item_{RID}"


def make(truncates: bool = False) -> Script:
    settings = ShimSettings(vad=VadParams(), min_barge_in_ms=200, echo_suppression=False)
    caps = {"supports_barge_in": False, "supports_audio_truncate": truncates}
    return Script(BargeInRelaySession("sess_0123456789abcdef", "m", settings, caps))


def start_response(sc: Script, chunks: int = 10, rate: int = 22050) -> list:  # type: ignore[type-arg]
    seq = iter(range(10, 1000))
    out = sc.upstream(
        {
            "type": "response.created",
            "response": {"id": RID, "status": "in_progress"},
            "server_event_seq": next(seq),
        }
    )
    for _ in range(chunks):
        out += sc.upstream(
            {
                "type": "response.output_audio.delta",
                "response_id": RID,
                "item_id": AID,
                "output_index": 0,
                "content_index": 0,
                "delta": pcm_b64(100, rate),
                "format": "pcm16",
                "sample_rate_hz": rate,
                "server_event_seq": next(seq),
            }
        )
        out += sc.upstream(
            {
                "type": "response.output_audio_transcript.delta",
                "response_id": RID,
                "item_id": AID,
                "delta": "word ",
                "server_event_seq": next(seq),
            }
        )
    return out


def test_upstream_events_are_relayed_without_the_upstreams_seq() -> None:
    sc = make()
    out = start_response(sc, chunks=2)
    events = client_events(out)
    assert events[0]["type"] == "response.created"
    assert all("server_event_seq" not in e for e in events), "the proxy numbers events itself"
    acks = [e for e in upstream_events(out) if e["type"] == "session.event_ack"]
    assert all(isinstance(a["server_event_seq"], int) for a in acks)


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
    assert up == ["playback.ack", "response.cancel"]
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


def test_session_update_goes_upstream_without_turn_detection() -> None:
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
    assert "turn_detection" not in forwarded["session"]["audio"]["input"]
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


def test_unknown_client_events_pass_through_untouched() -> None:
    sc = make()
    out = sc.client({"type": "vendor.custom", "x": [1, 2]})
    assert isinstance(out[0], ForwardUpstream)
    assert '"vendor.custom"' in out[0].raw
