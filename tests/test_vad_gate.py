"""VadGate on scripted probabilities: every transition, in audio time."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shim.vad_gate import SpeechStarted, SpeechStopped, VadGate, VadParams

W = 512  # samples per 32 ms window at 16 kHz


def feed(gate: VadGate, probs: list[float], first: int = 1) -> list[tuple[int, object]]:
    """Push probs as consecutive windows; return (window number, event) pairs."""
    out: list[tuple[int, object]] = []
    for i, p in enumerate(probs, start=first):
        out.extend((i, ev) for ev in gate.push(p, i * W))
    return out


def test_defaults_follow_openai_server_vad() -> None:
    p = VadParams()
    assert (p.threshold, p.prefix_padding_ms, p.silence_duration_ms) == (0.5, 300, 500)
    assert p.deactivation == pytest.approx(0.35)
    assert VadParams(threshold=0.1).deactivation == 0.01  # floor
    assert VadParams(neg_threshold=0.2).deactivation == 0.2
    assert VadParams(threshold=0.3, neg_threshold=0.6).deactivation == 0.3  # never above


def test_start_after_min_speech_with_onset_in_audio_time() -> None:
    gate = VadGate(VadParams(min_speech_ms=150))
    # Silence for windows 1-3, speech from window 4 (starts at sample 3*512 = 96 ms).
    events = feed(gate, [0.1, 0.1, 0.1] + [0.9] * 10)
    assert len(events) == 1
    n, ev = events[0]
    # 96 ms onset; 5 windows = 160 ms >= 150 ms at the end of window 8 (256 ms).
    assert ev == SpeechStarted(audio_start_ms=96, detected_ms=256)
    assert n == 8
    assert gate.speaking


def test_burst_shorter_than_min_speech_never_starts() -> None:
    gate = VadGate(VadParams(min_speech_ms=150))
    assert feed(gate, [0.9] * 4 + [0.1] * 30) == []  # 128 ms of speech
    assert not gate.speaking


def test_min_speech_zero_starts_on_first_window() -> None:
    gate = VadGate(VadParams(min_speech_ms=0))
    assert gate.push(0.9, W) == [SpeechStarted(0, 32)]


def test_stop_after_silence_duration_excludes_the_silence() -> None:
    gate = VadGate(VadParams(silence_duration_ms=500))
    events = feed(gate, [0.9] * 10 + [0.0] * 20)
    assert [type(e) for _, e in events] == [SpeechStarted, SpeechStopped]
    n, stop = events[1]
    assert isinstance(stop, SpeechStopped)
    assert stop.audio_end_ms == 320  # end of window 10
    # 16 silent windows = 512 ms >= 500 ms, decided at the end of window 26.
    assert (n, stop.detected_ms) == (26, 832)
    assert not gate.speaking


def test_dips_shorter_than_silence_do_not_stop() -> None:
    gate = VadGate(VadParams(silence_duration_ms=500))
    pattern = [0.9] * 10 + [0.05] * 12 + [0.9] * 10 + [0.05] * 15 + [0.9] * 5
    events = feed(gate, pattern)
    assert [type(e) for _, e in events] == [SpeechStarted]  # 384 ms and 480 ms dips


def test_hysteresis_mid_probability_holds_speech_but_does_not_start_it() -> None:
    gate = VadGate(VadParams(threshold=0.5, min_speech_ms=64))
    assert feed(gate, [0.4] * 20) == []  # between neg (0.35) and threshold: not speech
    events = feed(gate, [0.6, 0.4, 0.4] + [0.4] * 40, first=21)
    # 0.6 starts the run, 0.4 keeps it (>= 0.35): speech starts, then never stops.
    assert [type(e) for _, e in events] == [SpeechStarted]
    # Falling below 0.35 begins the silence; 0.4 afterwards does not resume speech.
    events = feed(gate, [0.3] + [0.45] * 15 + [0.1] * 5, first=64)
    assert [type(e) for _, e in events] == [SpeechStopped]
    assert events[0][1] == SpeechStopped(audio_end_ms=63 * 32, detected_ms=(63 + 16) * 32)


def test_dip_below_neg_during_starting_resets_the_run() -> None:
    gate = VadGate(VadParams(min_speech_ms=150))
    events = feed(gate, [0.9, 0.9, 0.9, 0.2, 0.9, 0.9, 0.9, 0.9, 0.9])
    n, ev = events[0]
    # The run restarts at window 5 (128 ms) and needs 5 windows again.
    assert ev == SpeechStarted(audio_start_ms=128, detected_ms=288) and n == 9


def test_custom_neg_threshold() -> None:
    gate = VadGate(VadParams(threshold=0.6, neg_threshold=0.55, min_speech_ms=0))
    events = feed(gate, [0.7, 0.5] + [0.58] * 20)
    assert [type(e) for _, e in events] == [SpeechStarted, SpeechStopped]


def test_nan_counts_as_silence() -> None:
    gate = VadGate(VadParams(min_speech_ms=0, silence_duration_ms=64))
    events = feed(gate, [0.9, float("nan"), float("nan")])
    assert [type(e) for _, e in events] == [SpeechStarted, SpeechStopped]


def test_speech_starts_at_its_onset_once_it_lasted_min_speech() -> None:
    gate = VadGate(VadParams(min_speech_ms=150))
    assert feed(gate, [0.0, 0.9, 0.9, 0.9]) == []  # still STARTING: not speaking yet
    assert not gate.speaking
    ((_, started),) = feed(gate, [0.9, 0.9], first=5)
    assert gate.speaking
    assert started == SpeechStarted(32, 192)  # onset at 32 ms, decided at 192 ms


def test_padded_start_clamps_at_stream_start() -> None:
    gate = VadGate(VadParams(prefix_padding_ms=300))
    assert gate.padded_start_ms(SpeechStarted(1000, 1200)) == 700
    assert gate.padded_start_ms(SpeechStarted(100, 300)) == 0


def test_update_changes_durations_mid_run() -> None:
    gate = VadGate(VadParams(min_speech_ms=1000))
    assert feed(gate, [0.9] * 10) == []
    gate.update(VadParams(min_speech_ms=100, silence_duration_ms=100))
    assert gate.params.min_speech_ms == 100
    events = feed(gate, [0.9, 0.0, 0.0, 0.0, 0.0], first=11)
    assert [e for _, e in events] == [SpeechStarted(0, 352), SpeechStopped(352, 480)]


def test_update_threshold_applies_to_next_window() -> None:
    gate = VadGate(VadParams(min_speech_ms=0))
    gate.update(VadParams(threshold=0.95, min_speech_ms=0))
    assert feed(gate, [0.9] * 5) == []
    assert feed(gate, [0.96], first=6) == [(6, SpeechStarted(160, 192))]


def test_reset_forgets_the_run_and_the_clock() -> None:
    gate = VadGate(VadParams(min_speech_ms=0))
    feed(gate, [0.9] * 5)
    assert gate.speaking
    gate.reset()
    assert not gate.speaking
    # Time may restart at zero after a reset, and no SpeechStopped is owed.
    assert feed(gate, [0.0] * 30) == []
    assert feed(gate, [0.9], first=31) == [(31, SpeechStarted(960, 992))]


def test_time_going_backwards_is_a_caller_bug() -> None:
    gate = VadGate(VadParams())
    gate.push(0.1, 2 * W)
    with pytest.raises(ValueError, match="not after"):
        gate.push(0.1, 2 * W)


def test_non_contiguous_windows_use_their_own_start() -> None:
    gate = VadGate(VadParams(min_speech_ms=0, silence_duration_ms=100))
    assert gate.push(0.9, 10 * W) == [SpeechStarted(288, 320)]
    # Silence is measured in audio time, so samples with no window count towards it.
    assert gate.push(0.0, 20 * W) == [SpeechStopped(320, 640)]


def test_rate_8k_uses_256_sample_windows() -> None:
    gate = VadGate(VadParams(min_speech_ms=0))
    assert gate.push(0.9, 256, rate_hz=8000) == [SpeechStarted(0, 32)]


@settings(max_examples=300, deadline=None)
@given(
    probs=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=300),
    steps=st.lists(st.integers(min_value=1, max_value=3), min_size=300, max_size=300),
    threshold=st.floats(min_value=0.05, max_value=0.95),
    min_speech=st.integers(min_value=0, max_value=400),
    silence=st.integers(min_value=0, max_value=800),
)
def test_events_alternate_and_times_are_monotonic(
    probs: list[float], steps: list[int], threshold: float, min_speech: int, silence: int
) -> None:
    gate = VadGate(
        VadParams(threshold=threshold, min_speech_ms=min_speech, silence_duration_ms=silence)
    )
    events: list[SpeechStarted | SpeechStopped] = []
    end = 0
    for p, step in zip(probs, steps, strict=False):
        end += step * W  # windows may skip ahead, never go back
        new = gate.push(p, end)
        assert len(new) <= 1
        events.extend(new)
        assert gate.speaking == (bool(events) and isinstance(events[-1], SpeechStarted))
    last = -1
    for i, ev in enumerate(events):
        assert isinstance(ev, SpeechStarted if i % 2 == 0 else SpeechStopped)
        t = ev.audio_start_ms if isinstance(ev, SpeechStarted) else ev.audio_end_ms
        assert last <= t <= ev.detected_ms  # the described audio precedes the decision
        if isinstance(ev, SpeechStarted):
            assert ev.detected_ms - t >= min_speech
        else:
            assert ev.detected_ms - t >= silence
        last = ev.detected_ms if isinstance(ev, SpeechStopped) else t


def test_a_run_resumed_as_speaking_is_never_started_again_and_stops_once() -> None:
    gate = VadGate(VadParams())
    gate.resume_speaking()  # a run told begun before a move (shim/told_run.py)
    assert gate.speaking
    events = feed(gate, [0.9] * 10 + [0.1] * 20)
    assert [type(e) for _, e in events] == [SpeechStopped]
    stop = events[0][1]
    assert isinstance(stop, SpeechStopped) and stop.audio_end_ms == 320
