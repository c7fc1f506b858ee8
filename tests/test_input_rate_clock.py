"""The input clock (``proxy/client_limits.py``, ``InputClock``) counts audio time, not
bytes (docs/protocol.md, "Errors"): a second of audio costs a second in every format,
read from what the session told (in vLLM-Omni's spellings for a native client, GA's
for a GA client), not from what the client asked.
"""

from __future__ import annotations

import orjson

from proxy.client_limits import AUDIO_BYTES_PER_S, InputClock
from shim.audio import PCMU as ULAW
from shim.audio import AudioFormat
from tests.input_rate_events import PCMU, PCMU_TOLD, append, told


def test_a_second_of_audio_costs_a_second_in_every_format() -> None:
    clock = InputClock()
    assert clock.cost(append(48000)) == AUDIO_BYTES_PER_S  # 24 kHz PCM16 by default
    clock.accepted(PCMU_TOLD)
    assert clock.cost(append(8000)) == AUDIO_BYTES_PER_S  # a second of G.711
    # An append naming its own format and rate (vLLM-Omni's clients) is read so.
    assert clock.cost(append(32000, format="pcm16", sample_rate_hz=16000)) == AUDIO_BYTES_PER_S
    clock.accepted({"input_audio_format": "pcm_f32le", "sample_rate_hz": 16000})  # vLLM-Omni's
    assert clock.cost(append(64000)) == AUDIO_BYTES_PER_S
    assert clock.cost({"type": "input_audio_buffer.commit"}) == 0


def test_the_clock_follows_what_the_session_told_not_what_the_client_asked() -> None:
    clock = InputClock()
    # The session may refuse it, or apply part of it: only what it tells counts.
    assert clock.cost(PCMU) == 0
    assert clock.cost(append(48000)) == AUDIO_BYTES_PER_S
    clock.told(orjson.dumps(told(PCMU_TOLD)).decode())
    assert clock.cost(append(8000)) == AUDIO_BYTES_PER_S
    pcm16k = {"audio": {"input": {"format": {"type": "audio/pcm", "rate": 16000}}}}
    clock.told(orjson.dumps({"type": "session.created", "session": pcm16k}).decode())
    assert clock.cost(append(32000)) == AUDIO_BYTES_PER_S
    # What names no format, or none readable, leaves it as it was; nothing raises.
    td = {"type": "semantic_vad", "eagerness": ["high"]}
    for session in ({"audio": {"input": {"turn_detection": td}}}, {"audio": [1]}, 5, None):
        clock.accepted(session)
        clock.told(orjson.dumps(told(session)).decode())
    for bad in (5, "audio/ogg", {"type": 7}, {"type": "audio/pcm", "rate": "x"}):
        clock.accepted({"audio": {"input": {"format": bad}}})
        clock.told(orjson.dumps(told({"input_audio_format": bad})).decode())
    assert clock.cost(append(32000)) == AUDIO_BYTES_PER_S
    clock.told('{not json, but "session."')
    assert clock.cost(append(8000, format=["x"], sample_rate_hz={})) > 0


def test_the_clock_reads_vllm_omni_session_objects_in_its_spellings() -> None:
    # vLLM-Omni tells its session as ``realtime_audio_format_object`` spells it: a
    # G.711 object names the session's rate, which GA's never does.
    for name, rate in (("g711_ulaw", 16000), ("g711_alaw", 8000)):
        clock = InputClock()
        fmt = {"type": f"audio/{name}", "rate": rate}
        clock.told(
            orjson.dumps(
                told({"input_audio_format": name, "audio": {"input": {"format": fmt}}})
            ).decode()
        )
        assert clock.cost(append(rate)) == AUDIO_BYTES_PER_S, name
    for spelling in ("mulaw", "audio/g711_ulaw", {"type": "ulaw"}):
        clock = InputClock()
        clock.accepted({"audio": {"input": {"format": spelling}}})
        assert clock.cost(append(8000)) == AUDIO_BYTES_PER_S, spelling


def test_a_session_event_of_any_size_is_read_by_its_type() -> None:
    # A session object may carry long instructions or tools: its size says nothing.
    pcmu = {**PCMU_TOLD, "instructions": "x" * 100_000}
    for frame in (told(pcmu), {"type": "session.created", "session": pcmu}):
        clock = InputClock()
        clock.told(orjson.dumps(frame).decode())
        assert clock.cost(append(8000)) == AUDIO_BYTES_PER_S, frame["type"]
    # Python's json spells ``"type": "..."`` with a space.
    clock = InputClock(native=True)
    clock.told('{"type": "session.updated", "session": {"input_audio_format": "g711_ulaw"}}')
    # vLLM-Omni's object naming no rate: its own, 16 kHz (``protocol/realtime/session.py``).
    assert clock.cost(append(16000)) == AUDIO_BYTES_PER_S
    # Another event naming a session format in its text is no session event.
    clock = InputClock()
    delta = {
        "type": "response.output_text.delta",
        "delta": '"session.updated"',
        "session": PCMU_TOLD,
    }
    clock.told(orjson.dumps(delta).decode())
    assert clock.cost(append(48000)) == AUDIO_BYTES_PER_S


def test_a_native_clients_clock_reads_its_session_as_vllm_omni_does() -> None:
    """vLLM-Omni echoes the client's ``audio`` object but applies the flat keys first
    (``apply_realtime_session_defaults``), and ignores a rate that is no number."""
    clock = InputClock(native=True)
    assert clock.cost(append(32000)) == AUDIO_BYTES_PER_S  # 16 kHz until told
    echoed = {"type": "audio/pcm", "rate": 24000}
    clock.accepted(
        {
            "input_audio_format": "pcm16",
            "sample_rate_hz": 16000,
            "audio": {"input": {"format": echoed}},
        }
    )
    assert clock.cost(append(32000)) == AUDIO_BYTES_PER_S  # 16 kHz, not the echoed 24
    # "16k" is not applied, and hides audio.input's rate: the format still is.
    clock.accepted(
        {
            "input_audio_format": "g711_ulaw",
            "sample_rate_hz": "16k",
            "audio": {"input": {"sample_rate_hz": 8000}},
        }
    )
    assert clock.input_format == AudioFormat(ULAW, 16000)
    assert clock.cost(append(16000)) == AUDIO_BYTES_PER_S


def test_a_ga_clients_clock_is_ga_whatever_keys_the_session_holds() -> None:
    """A GA client's ``session.created`` over a duplex upstream holds the upstream's
    flat keys too: the clock stays a GA client's (an untagged-rate G.711 append is
    8 kHz), and a beta-shaped object naming no rate is 24 kHz PCM16 / 8 kHz G.711."""
    clock = InputClock()
    ga = {"type": "audio/pcm", "rate": 24000}
    clock.accepted(
        {"input_audio_format": "pcm16", "sample_rate_hz": 16000, "audio": {"input": {"format": ga}}}
    )
    assert clock.cost(append(48000)) == AUDIO_BYTES_PER_S
    assert clock.cost(append(8000, format="g711_ulaw")) == AUDIO_BYTES_PER_S
    for beta, per_s in (("pcm16", 48000), ("g711_ulaw", 8000)):
        clock = InputClock()
        clock.told(orjson.dumps(told({"input_audio_format": beta})).decode())
        assert clock.cost(append(per_s)) == AUDIO_BYTES_PER_S, beta
