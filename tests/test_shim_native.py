"""What vLLM-Omni's native clients say beyond GA, piece by piece: the session's
``auto_response``, each append's own format and rate, the refusals of the turn-based
dialect, and a client's playback ack in the upstream's measure (barge_in_emulated)."""

from __future__ import annotations

import numpy as np
import pybase64
import pytest

from shim.actions import SendClient
from shim.audio import PCM16, PCM_F32, PCMA, PCMU, AudioError, AudioFormat
from shim.dialects import turn_limits
from shim.dialects.relay_client_acks import in_upstream_measure
from shim.native_client import InputRates, NativeOptions, append_format
from shim.output import ActiveResponse
from shim.playback import ItemPlayback
from tests.duplex_relay_script import AID, RID, start_response
from tests.duplex_relay_script import make as make_relay
from tests.shim_script import client_events, upstream_events

DECLARED = AudioFormat(PCM16, 24000)


def test_auto_response_is_read_from_either_shape_and_only_when_set() -> None:
    opts = NativeOptions()
    opts.note_update({"session": {"extra_body": {"auto_response": True}}})
    assert opts.auto_response and opts.to_wire() == {"native": {"auto_response": True}}
    opts.note_update({"session": {"instructions": "x"}})
    assert opts.auto_response, "an update that does not say keeps it"
    opts.note_update({"extra_body": {"auto_response": False}})  # the flat shape
    assert not opts.auto_response and opts.to_wire() == {}
    opts.note_update({"session": {"extra_body": {"auto_response": "yes"}}})
    assert not opts.auto_response, "only a boolean counts, as on vLLM-Omni"
    moved = NativeOptions()
    moved.restore({"native": {"auto_response": True}})
    assert moved.auto_response
    moved.restore({})
    assert not moved.auto_response


@pytest.mark.parametrize(
    ("commit", "auto", "answers"),
    [
        ({}, True, True),
        ({}, False, False),
        ({"response_create": False}, True, True),  # vLLM-Omni answers it all the same
        ({"response_create": False}, False, False),
        ({"create_response": True}, False, True),
        ({"response_create": "yes"}, False, False),
    ],
)
def test_a_commit_answers_when_it_asks_else_when_the_session_auto_responds(
    commit: dict[str, object], auto: bool, answers: bool
) -> None:
    assert NativeOptions(auto_response=auto).commit_answers(commit) is answers


def test_an_append_names_its_own_format_and_rate() -> None:
    assert append_format({}, DECLARED) == DECLARED
    assert append_format({"sample_rate_hz": 16000}, DECLARED) == AudioFormat(PCM16, 16000)
    assert append_format({"format": "pcm_f32le"}, DECLARED) == AudioFormat(PCM_F32, 24000)
    assert append_format({"format": "S16LE", "sample_rate_hz": 8000.0}, DECLARED) == AudioFormat(
        PCM16, 8000
    )
    # vLLM-Omni's G.711 names (8 kHz unless said); GA's are not among them.
    assert append_format({"format": "g711_ulaw"}, DECLARED) == AudioFormat(PCMU, 8000)
    assert append_format({"format": "mulaw", "sample_rate_hz": 16000}, DECLARED) == AudioFormat(
        PCMU, 16000
    )
    assert append_format({"format": "G711_ALAW"}, AudioFormat(PCMA, 8000)) == AudioFormat(
        PCMA, 8000
    )
    for bad, code in [
        ({"format": "audio/pcmu"}, "unsupported_audio_format"),
        ({"format": 16}, "unsupported_audio_format"),
        ({"sample_rate_hz": True}, "invalid_value"),
        ({"sample_rate_hz": 4000}, "invalid_value"),
        ({"sample_rate_hz": float("nan")}, "invalid_value"),
        ({"sample_rate_hz": 16000.5}, "invalid_value"),
    ]:
        with pytest.raises(AudioError) as refused:
            append_format(bad, DECLARED)
        assert refused.value.code == code


def test_switching_rates_keeps_the_resamplers_tail() -> None:
    rates = InputRates()
    tone = (np.sin(np.arange(8000) / 8.0) * 8000).astype(np.int16)
    held = rates.to_vad_rate(tone, 8000)  # 1 s at 8 kHz, less what the resampler holds
    assert held.size < 16000
    rest = rates.to_vad_rate(np.zeros(1600, dtype=np.int16), 16000)
    assert held.size + rest.size == pytest.approx(16000 + 1600, abs=16), "nothing lost"


def test_the_turn_based_dialect_names_what_it_refuses() -> None:
    kept, refused = turn_limits.strip_session_fields(
        {"type": "session.update", "instructions": "x", "tool_choice": "auto", "model": "m"}
    )
    assert refused == ["instructions"] and kept == {
        "type": "session.update",
        "tool_choice": "auto",
        "model": "m",
    }
    same = {"session": {"instructions": None, "tools": []}}
    assert turn_limits.strip_session_fields(same) == (same, [])
    assert turn_limits.refused_response_option({"response": {"voice": "alloy"}}) == (
        "response.voice"
    )
    assert turn_limits.refused_response_option({"response": {"conversation": "auto"}}) is None
    assert turn_limits.refused_response_option({}) is None
    assert "audio turns only" in turn_limits.event_message("conversation.item.create")
    assert turn_limits.event_message("x.y") == (
        "event type 'x.y' is not supported over a turn-based upstream"
    )


def test_an_ack_of_all_that_was_sent_reaches_the_upstream_as_all_it_sent() -> None:
    item = ItemPlayback(AID, RID, 24000)
    item.add_audio(24000 * 1970 // 1000, 0.0)
    resp = ActiveResponse(RID, AID)
    ack = {"type": "playback.ack", "played_ms": 1970, "committed_ms": 1970}
    told = in_upstream_measure(ack, item, resp, 2000.0)
    assert (told["played_ms"], told["committed_ms"]) == (2000, 2000)
    assert in_upstream_measure({**ack, "played_ms": 900}, item, resp, 2000.0)["played_ms"] == 900
    kept = in_upstream_measure({**ack, "committed_ms": 0}, item, resp, 2000.0)
    assert (kept["played_ms"], kept["committed_ms"]) == (2000, 0)
    assert in_upstream_measure(ack, None, resp, 2000.0) is ack
    assert in_upstream_measure(ack, item, None, 2000.0) is ack
    assert in_upstream_measure(ack, item, resp, 1900.0) is ack, "never less than the client's"
    resp.held.append(SendClient({"type": "response.output_audio.delta"}))
    assert in_upstream_measure(ack, item, resp, 2000.0) is ack, "not while audio is held"


def test_the_relay_passes_a_full_ack_on_in_the_upstreams_measure() -> None:
    sc = make_relay()
    start_response(sc, chunks=4, rate=22050)  # 400 ms, resampled to the client's 24 kHz
    sent = sc.s.ledger.get(AID)
    assert sent is not None and sent.sent_ms < 400
    up = upstream_events(
        sc.client({"type": "playback.ack", "played_ms": int(sent.sent_ms) + 1, "item_id": AID})
    )
    assert [(e["type"], e["played_ms"]) for e in up] == [("playback.ack", 400)]


def test_the_relay_sends_the_resamplers_tail_before_the_audio_ends() -> None:
    sc = make_relay()
    out = start_response(sc, chunks=4, rate=22050)  # 400 ms at 22.05 kHz
    done = sc.upstream({"type": "response.output_audio.done", "response_id": RID, "item_id": AID})
    events = client_events(out + done)
    kinds = [e["type"] for e in events]
    assert kinds[-1] == "response.output_audio.done"
    assert kinds[-2] == "response.output_audio.delta", "the tail, just before the end"
    audio = b"".join(pybase64.b64decode(e["delta"]) for e in events if e["type"] == kinds[-2])
    assert len(audio) // 2 == pytest.approx(24000 * 0.4, abs=24), "all 400 ms, at 24 kHz"
    item = sc.s.ledger.get(AID)
    assert item is not None and item.sent_ms == pytest.approx(400, abs=1)
