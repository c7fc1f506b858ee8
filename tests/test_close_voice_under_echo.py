"""A television or a room of voices over the assistant's echo is not a close voice.

Echo suppression cuts bands by up to 40 dB per frame while the assistant's syllables
play, and so chops a continuous television into sharp falls, as a voice at the
microphone makes them (``shim/overlap_directness.py``). Replayed in audio time through
the session core with real Silero (``bench/bargein_replay.py``): the derived television
and babble cases of the dev corpus, 4 dB louder than ``bench/bargein_cases.py`` makes
them (about 8 dB under the user), the answer's echo at -10 dB, 120 ms late."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from tests.servers import ROOT

sys.path.insert(0, str(ROOT / "bench"))

from bargein_cases import build_cases, derived_background, prompt_clip, read_wav
from bargein_replay import run

from proxy.vad import VadRunner

CORPUS = ROOT.parent / "shared" / "corpus" / "dev"
LOUDER_DB = 4.0


@pytest.mark.parametrize(
    ("seed", "name"), [(0, "dev_tv1"), (1, "dev_babble1"), (1, "dev_tv1"), (2, "dev_babble0")]
)
def test_a_television_over_suppressed_echo_does_not_cut_the_answer(seed: int, name: str) -> None:
    prompt = read_wav(CORPUS / prompt_clip(CORPUS))
    case = next(c for c in derived_background(CORPUS, "replay", seed) if c.name == name)
    assert case.clip is not None
    case.clip = case.clip * np.float32(10 ** (LOUDER_DB / 20))
    case.echo_gain, case.echo_delay_ms = 10 ** (-10 / 20), 120
    r = run(case, prompt, VadRunner(), None)
    # Held at some point (taken for the user's voice for a while), so the answer not cut
    # is the decision's, not a case that never came near it.
    assert any(w["holding"] for w in r.windows), f"{name} seed {seed} was never held"
    assert r.cut_ms is None, f"{name} seed {seed} cut the answer at {r.cut_ms} ms"


@pytest.mark.parametrize("name", ["utt04_clean.wav"])
def test_a_quiet_close_voice_under_the_answers_echo_cuts_the_answer(name: str) -> None:
    """The user 10 dB quieter than in their turn, with the answer's echo at -10 dB on the
    microphone: the echo fills the gaps between the voice's syllables on the microphone,
    so its falls reached only down to the echo, and the voice was taken for background.
    The falls are measured on the microphone less the echo that linear subtraction
    expects there (``EchoSuppressor.expected``): a voice's, as with no echo."""
    prompt = read_wav(CORPUS / prompt_clip(CORPUS))
    case = next(c for c in build_cases(CORPUS, ["replay"]) if c.name == name)
    assert case.clip is not None
    case.clip = case.clip * np.float32(10 ** (-10 / 20))
    case.echo_gain, case.echo_delay_ms = 10 ** (-10 / 20), 120
    r = run(case, prompt, VadRunner(), None)
    assert r.cut_ms is not None, f"{name} under the echo never cut the answer"
