"""Speech over the answer's last moments judged its echo, judged again once it is over.

duplex_emulated by script (``shim/echo_run.py``): the client's microphone hears the
assistant's answer back (echo suppression on) and, as the reference stand-in answers
in the user's own voice, the user who starts speaking just before the answer ends is
heard as that echo. The run of speech must become the user's turn, from its onset,
once it goes on past the answer and its echo tail; echo that ends with the answer
never may.
"""

from __future__ import annotations

import numpy as np
import pybase64
import pytest

from shim.actions import Action
from shim.audio import b64encode
from shim.dialects.turn_based import TurnBasedSession
from shim.echo_run import ECHO_TAIL_MS
from shim.inputs import VadWindow
from shim.session import ShimSettings
from shim.vad_gate import VadParams
from tests.shim_script import WINDOW, Script, client_events, types, upstream_events

RATE = 24000
ANSWER_MS = 1000
ECHO_DELAY_MS = 60
STEP_MS = 32  # one VAD window of audio per append, in real time


def voice(t: np.ndarray, peak: float) -> np.ndarray:
    """A voice: harmonics of a pitch that wanders (so no two stretches are alike)."""
    f0 = 125 + 25 * np.sin(2 * np.pi * 1.3 * t)
    phase = 2 * np.pi * np.cumsum(f0) / RATE
    wave = sum(np.sin(h * phase) / h for h in range(1, 6))
    return np.asarray(wave / 1.6 * peak)


def make() -> Script:
    settings = ShimSettings(vad=VadParams(), echo_suppression=True)
    return Script(TurnBasedSession("sess_0123456789abcdef", "demo", "demo-up", settings))


def answer(sc: Script, answer_ms: int = ANSWER_MS) -> np.ndarray:
    """A first turn, then its answer: ``answer_ms`` of audio sent at once (the client
    plays it as it goes), complete. Returns the answer's audio."""
    sc.speak([0.05] * 5 + [0.9] * 20 + [0.05] * 20)
    t = np.arange(RATE * answer_ms // 1000) / RATE
    far = voice(t, 6000)
    pcm = far.astype("<i2")
    for i in range(answer_ms // 100):
        chunk = pcm[i * RATE // 10 : (i + 1) * RATE // 10]
        sc.upstream(
            {
                "type": "response.output_audio.delta",
                "audio": b64encode(chunk.tobytes()),
                "format": "pcm16",
                "sample_rate_hz": RATE,
            }
        )
    sc.upstream({"type": "transcription.done", "text": "the answer"})
    sc.upstream({"type": "response.output_audio.done", "has_audio": True})
    return far


def listen(
    sc: Script, far: np.ndarray, speech: tuple[int, int], user_from: int
) -> tuple[list[Action], dict[str, float]]:
    """The microphone from the answer's start, in real time, with a VAD probability per
    window: the answer's echo (6 dB down, ``ECHO_DELAY_MS`` late), called speech within
    ``speech`` (ms after the answer's start); the user's own voice from ``user_from`` on
    while it is speech. Then a second of silence. Returns the actions and when (ms
    after the answer was sent) each client event type was first sent."""
    delay = RATE * ECHO_DELAY_MS // 1000
    total = speech[1] + 1000
    n = RATE * STEP_MS // 1000
    out: list[Action] = []
    when: dict[str, float] = {}
    t0 = sc.now
    for k in range(total // STEP_MS):
        lo, hi = k * n, (k + 1) * n
        idx = np.arange(lo, hi)
        src = idx - delay
        mic = np.where((src >= 0) & (src < far.size), far[np.clip(src, 0, far.size - 1)] / 2, 0.0)
        ms = k * STEP_MS
        is_speech = speech[0] <= ms < speech[1]
        if is_speech and ms >= user_from:
            mic = mic + voice(idx / RATE, 4000)
        sc.now += STEP_MS
        got = sc.client(
            {"type": "input_audio_buffer.append", "audio": b64encode(mic.astype("<i2").tobytes())}
        )
        sc.vad_end += WINDOW
        got += sc.s.handle(VadWindow(0.9 if is_speech else 0.05, sc.vad_end, sc.now))
        for kind in types(got):
            when.setdefault(kind, sc.now - t0)
        out += got
    return out, when


@pytest.mark.parametrize("before_end_ms", [600, 300, 100])
def test_speech_begun_over_the_answers_end_and_going_on_is_the_users_turn(
    before_end_ms: int,
) -> None:
    sc = make()
    far = answer(sc)
    start_ms = int(sc.s.history.end_ms)
    onset = ANSWER_MS - before_end_ms
    # 1.9 s of speech: heard as the answer's echo until it ends, the user's after it.
    out, when = listen(sc, far, (onset, onset + 1900), user_from=ANSWER_MS + ECHO_DELAY_MS)
    events = client_events(out)
    t = types(out)
    assert t.count("input_audio_buffer.speech_started") == 1, t
    assert t.count("input_audio_buffer.speech_stopped") == 1
    assert "input_audio_buffer.committed" in t
    started = next(e for e in events if e["type"] == "input_audio_buffer.speech_started")
    # From its onset (the prefix padding before it): what was said over the answer's
    # end is the turn's too.
    assert started["audio_start_ms"] <= start_ms + onset
    stopped = next(e for e in events if e["type"] == "input_audio_buffer.speech_stopped")
    assert stopped["audio_end_ms"] >= start_ms + onset + 1900 - 64
    assert started["item_id"] == stopped["item_id"]
    # Told once the answer and its echo tail are over, not while it played.
    assert when["input_audio_buffer.speech_started"] > ANSWER_MS + ECHO_TAIL_MS
    assert sent_ms(out) >= stopped["audio_end_ms"] - started["audio_start_ms"] - 40


def sent_ms(out: list[Action]) -> int:
    """How much 16 kHz PCM16 audio went upstream in appends, in ms."""
    sent = b"".join(
        pybase64.b64decode(e["audio"])
        for e in upstream_events(out)
        if e["type"] == "input_audio_buffer.append"
    )
    return len(sent) // 2 * 1000 // 16000


@pytest.mark.parametrize("before_end_ms", [600, 300])
def test_echo_that_ends_with_the_answer_and_its_tail_is_never_a_turn(before_end_ms: int) -> None:
    sc = make()
    far = answer(sc)
    onset = ANSWER_MS - before_end_ms
    # The VAD calls the echo speech until the tail is almost over; no user voice at all.
    end = ANSWER_MS + ECHO_TAIL_MS - 64
    out, _ = listen(sc, far, (onset, end), user_from=10**6)
    t = types(out)
    assert "input_audio_buffer.speech_started" not in t
    assert "input_audio_buffer.committed" not in t


def test_a_long_run_judged_echo_keeps_all_its_audio_until_it_is_judged_again() -> None:
    """Between turns only a little input is kept; a run that may yet be the user's turn
    keeps all of it, so the turn it becomes is whole."""
    sc = make()
    answer_ms = 5000
    far = answer(sc, answer_ms)
    start_ms = int(sc.s.history.end_ms)
    onset = answer_ms - 4200
    out, _ = listen(sc, far, (onset, answer_ms + 1000), user_from=answer_ms + ECHO_DELAY_MS)
    events = client_events(out)
    started = next(e for e in events if e["type"] == "input_audio_buffer.speech_started")
    stopped = next(e for e in events if e["type"] == "input_audio_buffer.speech_stopped")
    assert started["audio_start_ms"] <= start_ms + onset
    assert sent_ms(out) >= stopped["audio_end_ms"] - started["audio_start_ms"] - 40
