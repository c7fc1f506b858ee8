"""duplex_emulated by script: a VAD turn announced, committed and sent upstream in its
dialect, the upstream's output as GA events at the client's rate, push-to-talk, a
client's cancel, and a response ended by a lost upstream or an upstream error."""

from __future__ import annotations

import pybase64

from shim.actions import AbortUpstream
from shim.inputs import UpstreamLost
from tests.shim_script import analyzed, client_events, types, upstream_events
from tests.turn_based_script import make, respond, run_turn


def test_a_vad_turn_is_announced_committed_and_sent_upstream_in_its_dialect() -> None:
    sc = make()
    out = run_turn(sc)
    t = types(out)
    assert t[:2] == ["input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped"]
    assert t[2:5] == [
        "input_audio_buffer.committed",
        "conversation.item.added",
        "conversation.item.done",
    ]
    assert t[5:] == [
        "response.created",
        "response.output_item.added",
        "conversation.item.added",
        "response.content_part.added",
    ]
    started = client_events(out)[0]
    # onset at 160 ms (5 quiet windows), minus 300 ms prefix padding, clamped at 0
    assert started["audio_start_ms"] == 0
    assert client_events(out)[1]["audio_end_ms"] == 160 + 20 * 32
    up = upstream_events(out)
    assert up[0] == {"type": "input_audio_buffer.commit", "final": False}
    assert up[-1] == {"type": "input_audio_buffer.commit", "final": True}
    sent = b"".join(
        pybase64.b64decode(e["audio"]) for e in up if e["type"] == "input_audio_buffer.append"
    )
    # 16 kHz PCM16 from the padded start (0) to the end of speech (800 ms)
    assert abs(len(sent) // 2 - 16 * 800) <= 16 * 40
    assert analyzed(out), "every append is analysed by the VAD"


def test_upstream_output_becomes_ga_events_with_ids_and_a_completed_response() -> None:
    sc = make()
    run_turn(sc)
    out = respond(sc, chunks=3)
    deltas = [e for e in client_events(out) if e["type"] == "response.output_audio.delta"]
    assert deltas and all({"response_id", "item_id", "delta"} <= set(d) for d in deltas)
    assert "audio" not in deltas[0]
    texts = [
        e["delta"]
        for e in client_events(out)
        if e["type"] == "response.output_audio_transcript.delta"
    ]
    assert texts == ["w0 ", "w1 ", "w2 "]
    out = sc.upstream({"type": "transcription.done", "text": "w0 w1 w2"})
    out += sc.upstream({"type": "response.output_audio.done", "has_audio": True})
    done = client_events(out)[-1]
    assert done["type"] == "response.done"
    assert done["response"]["status"] == "completed"
    assert done["response"]["output"][0]["content"][0]["transcript"] == "w0 w1 w2"


def test_output_is_resampled_to_the_clients_declared_rate() -> None:
    sc = make()
    sc.client(
        {
            "type": "session.update",
            "session": {
                "type": "realtime",
                "audio": {"output": {"format": {"type": "audio/pcm", "rate": 16000}}},
            },
        }
    )
    run_turn(sc)
    out = respond(sc, chunks=5, chunk_ms=200)
    n = sum(
        len(pybase64.b64decode(e["delta"])) // 2
        for e in client_events(out)
        if e["type"] == "response.output_audio.delta"
    )
    assert abs(n - 16000) < 1600  # ~1 s of audio at 16 kHz (minus resampler latency)


def test_push_to_talk_commits_on_request_and_responds_on_response_create() -> None:
    sc = make()
    sc.client(
        {
            "type": "session.update",
            "session": {"type": "realtime", "audio": {"input": {"turn_detection": None}}},
        }
    )
    out = sc.audio(500, amplitude=500)
    assert not analyzed(out), "no VAD when the client commits turns itself"
    out = sc.client({"type": "input_audio_buffer.commit"})
    assert types(out) == [
        "input_audio_buffer.committed",
        "conversation.item.added",
        "conversation.item.done",
    ]
    assert not upstream_events(out)
    out = sc.client({"type": "response.create"})
    assert types(out)[0] == "response.created"
    up = upstream_events(out)
    assert up[-1] == {"type": "input_audio_buffer.commit", "final": True}
    again = sc.client({"type": "response.create", "event_id": "e1"})
    assert client_events(again)[0]["error"]["code"] in (
        "response_create_without_input",
        "conversation_already_has_active_response",
    )


def test_client_cancel_ends_the_response_as_client_cancelled() -> None:
    sc = make()
    run_turn(sc)
    respond(sc, chunks=2)
    out = sc.client({"type": "response.cancel"})
    done = next(e for e in client_events(out) if e["type"] == "response.done")
    assert done["response"]["status_details"]["reason"] == "client_cancelled"
    assert any(isinstance(a, AbortUpstream) for a in out)
    again = sc.client({"type": "response.cancel"})
    assert client_events(again)[0]["error"]["code"] == "response_cancel_not_active"


def test_losing_the_upstream_mid_response_ends_it_incomplete_never_silently() -> None:
    sc = make()
    run_turn(sc)
    respond(sc, chunks=2)
    out = sc.s.handle(UpstreamLost("gone", sc.now))
    done = next(e for e in client_events(out) if e["type"] == "response.done")
    assert done["response"]["status"] == "incomplete"
    assert any(isinstance(a, AbortUpstream) and a.redial for a in out)


def test_an_upstream_error_mid_response_fails_the_response_with_its_code() -> None:
    sc = make()
    run_turn(sc)
    respond(sc, chunks=2)
    out = sc.upstream({"type": "error", "error": {"message": "boom"}, "code": "model_error"})
    events = client_events(out)
    assert events[0]["error"]["code"] == "model_error" and "boom" in events[0]["error"]["message"]
    (done,) = [e for e in events if e["type"] == "response.done"]
    assert done["response"]["status"] == "failed"
    assert done["response"]["status_details"]["error"]["code"] == "model_error"  # GA: the error
