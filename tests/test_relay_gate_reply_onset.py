"""A reply that begins just before the microphone gate opens after an answer reaches
the upstream from its onset.

``barge_in_emulated`` holds the microphone after an answer until its echo, as the echo
suppressor places it, has rung out (``shim/dialects/relay_gate.py``). A reply the user
starts 100-300 ms after the answer ends, while a late echo of it still sounds, begins
inside that hold. When the gate opened, the VAD had heard the held audio (bar the last
window) and its run was still starting (speech windows, not yet ``min_speech_ms`` of
them), or the window across the hold's end was still to come: the gate took that for
silence and sent the held audio only from the hold's end, and up to ~120 ms of the
reply's first word never reached the upstream. The gate now waits for the VAD to say
whether a run begins before that end, no longer than its onset confirmation takes.

Replayed through the relay in audio time with real Silero and the dev corpus's speech
(``bench/bargein_relay_replay.py``): the echo 350 ms late at -10 dB, the reply placed
after the answer's end so that its onset (as labelled) falls 30-70 ms before the gate
opens. By
script: no sockets, no clock.
"""

from __future__ import annotations

import itertools
import json
import sys

import pytest

from tests.servers import ROOT

sys.path.insert(0, str(ROOT / "bench"))

from bargein_cases import Case, prompt_clip, read_wav
from bargein_relay_replay import REPLY_MS, onset_lost_ms, run

from proxy.vad import VadRunner
from shim.dialects.relay_gate import PREFIX_MS
from shim.input_history import ms_to_sample

CORPUS = ROOT.parent / "shared" / "corpus" / "dev"


def labelled_onset_ms(name: str) -> int:
    clips = json.loads((CORPUS / "manifest.json").read_text())["clips"]
    [clip] = [c for c in clips if c["file"] == name]
    return int(clip["speech_ms"][0][0])


@pytest.mark.parametrize(
    ("name", "after_ms"),
    [("utt00_clean.wav", 250), ("utt00_clean.wav", 300), ("utt01_clean.wav", 100)],
)
def test_a_reply_begun_as_the_gate_opens_reaches_the_upstream_from_its_onset(
    name: str, after_ms: int
) -> None:
    prompt = read_wav(CORPUS / prompt_clip(CORPUS))
    onset_ms = labelled_onset_ms(name)
    case = Case("replay", "speech", name, read_wav(CORPUS / name), onset_ms)
    case.echo_gain, case.echo_delay_ms = 10 ** (-10 / 20), 350
    r = run(case, prompt, VadRunner(), None, REPLY_MS + after_ms)
    assert r.clip_at is not None
    onset = r.clip_at + ms_to_sample(onset_ms)
    sent = [(s, e) for s, e in r.sent if e > r.clip_at - ms_to_sample(1000)]
    assert sent, "the reply reached the upstream"
    first = sent[0][0]
    lost_ms = onset_lost_ms(r, onset_ms)
    assert lost_ms == 0, f"the reply's first {lost_ms} ms never reached the upstream"
    assert first <= onset - ms_to_sample(PREFIX_MS // 2), "with audio before its onset"
    assert all(a[1] == b[0] for a, b in itertools.pairwise(sent)), "whole and in order from there"
    assert r.upstream_speech >= 1 and r.echo_ms == 0
