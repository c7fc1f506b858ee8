"""The GA relay's microphone gate waits for the VAD on a run of speech begun just
before the answer's end (``shim/dialects/relay_gate.py``), and never longer than the
VAD's own onset confirmation takes: nothing stays held.

A client streaming in real time after an answer; one VAD window per 32 ms append, as
the edge gives them. By script: no sockets, no clock.
"""

from __future__ import annotations

import itertools

from shim.actions import Action, SendUpstream
from shim.dialects.relay_gate import PREFIX_MS
from shim.input_history import ms_to_sample
from tests.shim_ga_relay_script import make
from tests.shim_ga_turn_steps import SILENCE, SPEECH, answer_in_real_time, first_turn
from tests.shim_script import WINDOW, Script

MIN_SPEECH_MS = 150  # VadParams() default


def stream(sc: Script, probs: list[float]) -> list[Action]:
    """The client's audio in real time, one window at a time, with the edge's ticks."""
    out: list[Action] = []
    for p in probs:
        out += sc.speak([p]) + sc.tick(0)
    return out


def up_to_the_gate(sc: Script, windows_before: int) -> list[Action]:
    """Silence in real time until ``windows_before`` windows before the answer's end
    (its echo tail included) on the input timeline."""
    out: list[Action] = []
    answer_in_real_time(sc)
    while sc.vad_end + (windows_before + 1) * WINDOW <= sc.s.audio_gate.answer_end():
        out += stream(sc, [SILENCE])
    return out


def sent_spans(out: list[Action]) -> list[tuple[int, int]]:
    return [a.span for a in out if isinstance(a, SendUpstream) and a.span is not None]


def test_a_reply_whose_onset_the_vad_confirms_after_the_gate_opens_goes_from_its_onset() -> None:
    sc = make()
    first_turn(sc)
    out = up_to_the_gate(sc, 2)
    onset = sc.vad_end
    out += stream(sc, [SPEECH] * 30 + [SILENCE] * 20)
    spans = sent_spans(out)
    assert spans and not sc.s.audio_gate.held
    assert spans[0][0] <= onset - ms_to_sample(PREFIX_MS) + WINDOW, (spans[0], onset)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(spans)), "whole, in order"


def test_a_client_that_stops_sending_as_its_run_starts_leaves_nothing_held() -> None:
    sc = make()
    first_turn(sc)
    up_to_the_gate(sc, 2)
    stream(sc, [SPEECH] * 3)  # begun before the answer's end, not yet min_speech_ms
    assert sc.s.gate.starting and sc.s.audio_gate.held, "the VAD has yet to say"
    stopped = sc.now
    while sc.s.wants_ticks(sc.now) and sc.now - stopped < 5000:
        sc.tick(20)
    assert not sc.s.audio_gate.held, "judged once the VAD had its time"
    assert sc.now - stopped <= MIN_SPEECH_MS + 3 * 32, "no later than its confirmation takes"


def test_a_stuttering_client_leaves_nothing_held() -> None:
    sc = make()
    first_turn(sc)
    up_to_the_gate(sc, 6)
    for _ in range(12):  # clicks: runs that start and never last
        stream(sc, [SPEECH, SILENCE])
        if not sc.s.audio_gate.held:
            break
    assert not sc.s.audio_gate.held, "judged while the clicks went on"
    stream(sc, [SPEECH])  # one more, then nothing
    stopped = sc.now
    while sc.s.wants_ticks(sc.now) and sc.now - stopped < 5000:
        sc.tick(20)
    assert not sc.s.audio_gate.held
