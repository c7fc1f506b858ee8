"""The echo the suppressor expects over the close-voice measure's whole span.

``EchoSuppressor.expected`` is read over the last ``SPAN`` (500 ms) of microphone
audio up to the VAD's window (``shim/turns.py``), which lags the microphone's end.
The far reference must still hold the audio that echoes there at any delay up to
``max_delay``: missing far audio reads as silence, so the span's first part kept
its echo (a step in the microphone less the echo, at a 300 ms delay 1664 of 8000
samples). Where the span cannot be read whole, nothing is subtracted rather than
part of it.
"""

from __future__ import annotations

import numpy as np
import pytest

from shim.echo import EchoSuppressor
from shim.echo_far import FRAME
from shim.overlap_directness import SPAN
from shim.overlap_evidence import WINDOW, OverlapEvidence

RATE = 16000
CHUNK = 320  # 20 ms of microphone per call
# How far the VAD's newest window ends behind the microphone's end (mic timeline):
# the suppressor's frame, and up to a window not yet complete.
VAD_LAG = FRAME + WINDOW


def _locked(delay: int) -> tuple[EchoSuppressor, np.ndarray, int]:
    """A suppressor locked on echo at ``delay`` (gain 0.3) after 3 s of it."""
    rng = np.random.default_rng(0)
    far = (rng.standard_normal(RATE * 4) * 3000).astype(np.int16)
    es = EchoSuppressor()
    es.add_far(far, 0)
    mic = np.zeros(far.size, np.float32)
    mic[delay:] = far[:-delay].astype(np.float32) / 32768 * 0.3
    end = RATE * 3
    for at in range(0, end, CHUNK):
        es.process_scaled(mic[at : at + CHUNK], at)
    assert es.delay == delay
    return es, mic, end


@pytest.mark.parametrize("delay_ms", [300, 400])
def test_expected_covers_the_whole_span_up_to_the_vads_window(delay_ms: int) -> None:
    delay = RATE * delay_ms // 1000  # 400 ms: the largest delay searched
    es, mic, mic_end = _locked(delay)
    end = mic_end - VAD_LAG
    exp = es.expected(end - SPAN, end)
    assert exp is not None and exp.size == SPAN
    want = mic[end - SPAN : end]
    missing = int(np.sum((exp == 0) & (want != 0)))
    assert missing == 0, f"{missing} of {SPAN} samples of the span have no expected echo"
    # The expected echo is the echo itself here (gain locked near 0.3): what is left is small.
    left = float(np.sqrt(np.mean((want - exp) ** 2)) / np.sqrt(np.mean(want**2)))
    assert left < 0.05


def test_a_span_the_far_reference_has_passed_is_not_subtracted_in_part() -> None:
    es, _, mic_end = _locked(RATE * 400 // 1000)
    end = mic_end - RATE * 4 // 5  # 800 ms behind: the span's start has slid out of reach
    assert es.far.samples(end - es.far.max_delay - 1, end - es.far.max_delay).any()
    assert es.expected(end - SPAN, end) is None


def test_the_echo_is_read_under_the_window_measure_takes_when_the_clock_runs_ahead() -> None:
    """``measure`` takes the newest audio when the VAD's window clock runs ahead of it;
    the far audio read for it (``mic_window``, ``shim/turns.py``) must come from there
    too, or the microphone is compared with, and less, the echo of another moment."""
    ev = OverlapEvidence(latency=FRAME)
    rng = np.random.default_rng(1)
    mic = (rng.standard_normal(RATE) * 0.1).astype(np.float32)
    for at in range(0, RATE, CHUNK):
        ev.add_scaled(mic[at : at + CHUNK], mic[at : at + CHUNK], at)
    ahead = RATE + 3 * CHUNK  # the window clock is 60 ms ahead of the audio given
    lo, hi = ev.mic_window(ahead)
    assert (lo, hi) == (RATE - WINDOW - FRAME, RATE - FRAME)
    far = np.zeros(WINDOW, np.float32)
    far[: max(0, min(hi, mic.size) - lo)] = mic[lo : min(hi, mic.size)]
    assert ev.measure(0.9, ahead, far).coherence > 0.99
