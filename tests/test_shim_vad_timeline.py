"""The VAD's windows on the input timeline after push-to-talk (``shim/vad_timeline.py``).

With turn detection off nothing goes to the VAD, so its own count of samples falls
behind the input timeline by that stretch. A turn detected once server VAD is back
must still be cut from the input where it was spoken, and be timed there.
"""

from __future__ import annotations

import numpy as np
import pybase64

from shim.dialects.turn_based import TurnBasedSession
from shim.session import ShimSettings
from shim.vad_gate import VadParams
from shim.vad_timeline import VadTimeline
from tests.shim_script import Script, client_events, detection, upstream_events

PTT_LEVEL = 1234  # the push-to-talk stretch: a level no other audio here has


def test_runs_given_to_the_vad_map_its_windows_back_to_the_input() -> None:
    t = VadTimeline()
    t.given(0, 1000)
    t.given(1000, 24)  # contiguous: the same run
    t.given(5000, 2000)  # 3976 samples the VAD never heard
    t.given(7000, 512)
    assert t.to_input(512) == 512
    assert t.to_input(1024) == 1024
    assert t.to_input(1536) == 5000 + 512
    assert t.to_input(3536) == 7512
    t2 = VadTimeline()
    t2.given(800, 512)  # the first audio it hears comes after a stretch
    assert t2.to_input(512) == 1312


def test_a_turn_after_push_to_talk_is_cut_from_where_it_was_spoken() -> None:
    settings = ShimSettings(vad=VadParams(), echo_suppression=False)
    sc = Script(TurnBasedSession("sess_0123456789abcdef", "demo", "demo-up", settings))
    detection(sc, on=False)
    for _ in range(50):  # 2 s the VAD never hears
        sc.audio(40, amplitude=PTT_LEVEL)
        sc.tick(40)
    sc.client({"type": "input_audio_buffer.clear"})
    detection(sc, on=True)
    out = sc.speak([0.05] * 10 + [0.9] * 20 + [0.05] * 25)
    [started] = [e for e in client_events(out) if e["type"] == "input_audio_buffer.speech_started"]
    assert started["audio_start_ms"] >= 2000, "timed on the input timeline"
    sent = upstream_events(out)
    audio = b"".join(
        pybase64.b64decode(e["audio"]) for e in sent if e["type"] == "input_audio_buffer.append"
    )
    turn = np.frombuffer(audio, dtype="<i2")
    assert turn.size >= 16 * 640, "the 640 ms of speech went upstream"
    assert not np.any(turn == PTT_LEVEL), "none of the push-to-talk stretch"
    assert np.max(np.abs(turn)) > 3000, "the voice itself"
