"""barge_in_emulated for a GA client, by script: the upstream set up as GA implies, the
proxy's acks, the microphone held from the upstream during the answer, GA events only."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from shim.actions import NoteUpstreamError, SendUpstream
from shim.capabilities import GA_REASON, classify, client_of
from shim.dialects import ga_events
from shim.dialects.ga_relay import GaRelaySession
from shim.ga_upstream import opening_session
from shim.session import ShimSettings
from shim.vad_gate import VadParams
from tests.shim_ga_relay_script import AID, GA, RID, SERVER_VAD, answer, make
from tests.shim_script import Script, client_events, types, upstream_events

DUPLEX = {"type": "session.created", "session": {"capabilities": {"supports_barge_in": True}}}


def test_a_ga_client_is_emulated_over_an_upstream_that_can_barge_in() -> None:
    ga = classify(DUPLEX, client="ga")
    assert ga.mode == "barge_in_emulated" and GA_REASON in ga.reasons
    assert client_of(ga.reasons) == "ga"
    assert classify(DUPLEX, client="native").mode == "passthrough"
    assert classify(DUPLEX, client="ga", ga_passthrough=True).mode == "passthrough"


def test_the_opening_states_server_vad_and_the_clients_rate() -> None:
    assert opening_session(None) == {
        "turn_detection": SERVER_VAD,
        "input_audio_format": "audio/pcm",
        "sample_rate_hz": 24000,
    }
    ptt = opening_session({"type": "realtime", "audio": {"input": {"turn_detection": None}}})
    assert ptt["turn_detection"] is None and "type" not in ptt
    assert ptt["audio"] == {"input": {}}


def test_session_update_is_answered_by_the_proxy_and_sent_upstream_as_ga_implies() -> None:
    sc = make()
    out = sc.client(
        {
            "type": "session.update",
            "session": {
                "type": "realtime",
                "audio": {
                    "input": {"turn_detection": {"type": "semantic_vad", "eagerness": "low"}}
                },
            },
        }
    )
    [sent] = upstream_events(out)
    # semantic_vad's low: 1000 ms of silence (its auto, 500 ms, would change nothing
    # there, and go up without turn_detection: tests/test_shim_ga_update_turn_detection.py).
    assert sent["session"]["turn_detection"] == {**SERVER_VAD, "silence_duration_ms": 1000}
    updated = client_events(out)[0]
    assert updated["type"] == "session.updated"
    GA.validate_python({"event_id": "e", **updated})
    # The upstream's own session.updated never reaches the GA client.
    later = sc.upstream({"type": "session.updated", "session": {"id": "up-1"}})
    assert types(later) == []


def test_the_microphone_is_held_during_the_answer_and_the_end_is_acked() -> None:
    sc = make()
    assert upstream_events(sc.speak([0.1])), "nothing plays: the audio goes upstream"
    answer(sc)
    assert not upstream_events(sc.speak([0.1] * 2)), "the answer plays: held"
    sc.upstream({"type": "response.done", "response": {"id": RID, "status": "completed"}})
    acks: list[dict[str, Any]] = []
    for _ in range(40):
        acks += [e for e in upstream_events(sc.tick(50)) if e["type"] == "playback.ack"]
    assert [a["played_ms"] for a in acks] == [500], "the answer acked in full once played"
    assert acks[0]["event_id"].startswith("proxy_")
    sc.tick(400)
    after = upstream_events(sc.speak([0.1] * 3))
    assert [e["type"] for e in after] == ["input_audio_buffer.append"] * 3, "held echo dropped"


def test_an_error_answering_the_proxys_own_command_is_not_relayed() -> None:
    sc = make()
    err = {
        "type": "error",
        "event_id": "x",
        "error": {"type": "invalid_request_error", "code": "x", "message": "m"},
    }
    own = sc.upstream({**err, "error": {**err["error"], "event_id": "proxy_00000001"}})
    assert types(own) == [] and any(isinstance(a, NoteUpstreamError) for a in own)
    theirs = sc.upstream({**err, "error": {**err["error"], "event_id": "evt_client"}})
    assert types(theirs) == ["error"]


def test_non_ga_events_are_dropped_and_values_translated() -> None:
    for kind in ("response.speak", "overlap.decision", "playback.acknowledged", "turn.event"):
        assert ga_events.translate({"type": kind}) is None
    done = ga_events.translate(
        {
            "type": "response.done",
            "event_id": "e",
            "response": {
                "id": RID,
                "status": "cancelled",
                "status_details": {"type": "cancelled", "reason": "barge_in"},
                "metadata": {"turn": {"id": 1}},
                "output": [
                    {
                        "id": AID,
                        "type": "message",
                        "role": "assistant",
                        "content": [],
                        "status": "cancelled",
                    }
                ],
            },
        }
    )
    assert done is not None
    assert done["response"]["status_details"]["reason"] == "turn_detected"
    assert done["response"]["output"][0]["status"] == "incomplete"
    assert done["response"]["metadata"] == {"turn": '{"id":1}'}
    GA.validate_python(done)
    failed = ga_events.translate(
        {
            "type": "response.done",
            "event_id": "e",
            "response": {"id": RID, "status": "failed", "status_details": {"reason": "stop"}},
        }
    )
    assert failed is not None and failed["response"]["status_details"]["error"]
    GA.validate_python(failed)


def test_a_barge_in_releases_the_held_speech_after_the_cut() -> None:
    sc = make()
    sc.client({"type": "session.update", "session": {"type": "realtime"}})
    answer(sc, chunks=30)
    sc.tick(500)
    out = sc.speak([0.1] * 5 + [0.95] * 40)
    sent = upstream_events(out)
    kinds = [e["type"] for e in sent]
    assert "output_audio_buffer.clear" in kinds, kinds
    cut = kinds.index("output_audio_buffer.clear")
    assert kinds[cut - 1] == "playback.ack"
    assert "input_audio_buffer.append" in kinds[cut:], "the user's words follow the cut"
    assert "input_audio_buffer.append" not in kinds[:cut]
    assert all(isinstance(a, SendUpstream) for a in out if getattr(a, "event", None) in sent)


def test_a_client_truncate_is_acknowledged_upstream_too() -> None:
    sc = make(truncates=True)
    answer(sc)
    sc.tick(300)
    out = sc.client(
        {
            "type": "conversation.item.truncate",
            "item_id": AID,
            "content_index": 0,
            "audio_end_ms": 200,
        }
    )
    sent = upstream_events(out)
    assert "conversation.item.truncate" in [e["type"] for e in sent]
    acks = [e for e in sent if e["type"] == "playback.ack"]
    assert [a["played_ms"] for a in acks] == [200], sent


def test_a_truncate_after_the_answer_was_generated_is_acknowledged_at_its_position() -> None:
    sc = make(truncates=True)
    answer(sc)
    sc.upstream({"type": "response.done", "response": {"id": RID, "status": "completed"}})
    sc.tick(300)
    out = sc.client(
        {
            "type": "conversation.item.truncate",
            "item_id": AID,
            "content_index": 0,
            "audio_end_ms": 250,
        }
    )
    acks = [e for e in upstream_events(out) if e["type"] == "playback.ack"]
    assert [a["played_ms"] for a in acks] == [250]


FLOAT_24K = {"input_audio_format": "pcm_f32le", "sample_rate_hz": 24000}


def test_a_float_input_the_route_declares_is_kept_at_the_opening() -> None:
    opening = opening_session({"type": "realtime", "instructions": "hi"}, FLOAT_24K)
    assert opening["input_audio_format"] == "pcm_f32le"
    assert opening["sample_rate_hz"] == 24000
    assert opening["instructions"] == "hi"
    # A PCM16 route default pins nothing: the upstream reads the client's format.
    plain = opening_session(None, {"input_audio_format": "audio/pcm", "sample_rate_hz": 16000})
    assert plain["input_audio_format"] == "audio/pcm" and plain["sample_rate_hz"] == 24000


def test_pcm16_goes_upstream_as_the_float_the_upstream_declares() -> None:
    settings = ShimSettings(vad=VadParams(), echo_suppression=False)
    session = GaRelaySession("sess_0123456789abcdef", "m", settings, {})
    session.bind_upstream({"type": "session.created", "session": {"id": "up-1", **FLOAT_24K}})
    sc = Script(session, client_rate=16000)
    # The client speaks 16 kHz PCM16; its session.update never reaches the upstream's format.
    out = sc.client(
        {
            "type": "session.update",
            "session": {
                "type": "realtime",
                "audio": {"input": {"format": {"type": "audio/pcm", "rate": 16000}}},
            },
        }
    )
    [sent] = upstream_events(out)
    assert sent["session"]["input_audio_format"] == "pcm_f32le"
    assert sent["session"]["sample_rate_hz"] == 24000
    assert client_events(out)[0]["session"]["audio"]["input"]["format"]["rate"] == 16000
    got: list[np.ndarray[Any, np.dtype[np.float32]]] = []
    for _ in range(10):
        for ev in upstream_events(sc.voice(40)):
            assert ev["type"] == "input_audio_buffer.append"
            got.append(np.frombuffer(base64.b64decode(ev["audio"]), dtype="<f4"))
    floats = np.concatenate(got)
    # 400 ms at 24 kHz, less what the resampler still holds; a voice, not noise.
    assert 8400 <= floats.size <= 9600, floats.size
    assert np.all(np.isfinite(floats)) and 0.05 < float(np.max(np.abs(floats))) <= 4000 / 32768
    # A fresh upstream session that declares no float input: the client's PCM16 again.
    session.bind_upstream({"type": "session.created", "session": {"id": "up-2"}})
    [plain] = upstream_events(sc.audio(40))
    assert len(base64.b64decode(plain["audio"])) == 16000 * 40 // 1000 * 2


def test_a_resumed_upstream_keeps_the_float_it_was_given() -> None:
    settings = ShimSettings(vad=VadParams(), echo_suppression=False)
    session = GaRelaySession("sess_0123456789abcdef", "m", settings, {})
    session.bind_upstream({"type": "session.created", "session": {"id": "up-1", **FLOAT_24K}})
    restored = GaRelaySession("sess_0123456789abcdef", "m", settings, {})
    restored.last_update = session.last_update
    restored.bind_upstream({"type": "session.resumed", "session_id": "up-1"})
    [sent] = upstream_events(Script(restored).audio(40))
    assert len(base64.b64decode(sent["audio"])) == 24000 * 40 // 1000 * 4
