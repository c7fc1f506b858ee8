"""duplex_emulated: the client's input audio, by script through ``handle``: pcm_f32
read (NaN refused), and a long input without a turn kept bounded."""

from __future__ import annotations

import numpy as np
import pybase64

from shim.audio import b64encode
from tests.shim_edge_scripts import TURN, errors, turn_based
from tests.shim_script import upstream_events


def test_pcm_f32_input_is_read_and_nan_in_it_refused() -> None:
    sc = turn_based()
    sc.client(
        {
            "type": "session.update",
            "session": {"audio": {"input": {"format": {"type": "pcm_f32le", "rate": 16000}}}},
        }
    )
    samples = (np.sin(np.arange(16000) / 10) * 0.5).astype("<f4")
    out = sc.client({"type": "input_audio_buffer.append", "audio": b64encode(samples.tobytes())})
    assert not errors(out)
    nan = np.array([np.nan] * 4, dtype="<f4")
    (err,) = errors(
        sc.client({"type": "input_audio_buffer.append", "audio": b64encode(nan.tobytes())})
    )
    assert err["code"] == "invalid_audio"


def test_long_input_without_a_turn_keeps_memory_bounded_and_vad_turns_still_work() -> None:
    sc = turn_based()
    for _ in range(8):
        sc.audio(1000)  # 8 s of silence with no turn: only the recent part is kept
    sc.vad_end = 8 * 16000  # the VAD heard those 8 s too (as silence)
    out = sc.speak(TURN)
    up = upstream_events(out)
    sent = b"".join(
        pybase64.b64decode(e["audio"]) for e in up if e["type"] == "input_audio_buffer.append"
    )
    assert 0 < len(sent) // 2 <= 16 * 1500, "the turn from its padded start, not all 8 s"
