"""A voice judged someone else's over the answer is still theirs once the answer has ended.

A television the overlap decision released as background while the answer played, and
that goes on talking after it, became a new turn: in ``barge_in_emulated`` the gate sent
its run to the upstream from its onset, whose VAD took it for the user. It now stays
background after the answer until it pauses (``shim/background_run.py``); the user's own
voice in it, judged as over the answer, is still a turn. Replayed in audio time with real
Silero (``bench/bargein_replay.py``, ``bench/bargein_relay_replay.py``): the dev corpus's
question, an 8 s answer, the derived television 6.5 s into it (it talks on for about a
second after the answer), and the dev corpus's speech as the user's reply over it.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest
from pydantic import ValidationError

from tests.servers import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import bargein_relay_replay
import bargein_replay
from bargein_cases import RATE, Case, build_cases, derived_background, prompt_clip, read_wav

from proxy.config_vad import VadConfig
from proxy.emulated.shim_setup import shim_settings
from proxy.vad import VadRunner
from shim.background_run import BackgroundRun
from shim.settings import ShimSettings

CORPUS = ROOT.parent / "shared" / "corpus" / "dev"
TV_AT_MS = 6500  # where the television starts in the 8 s answer
ANSWER_MS = 8000


def television() -> Case:
    return next(c for c in derived_background(CORPUS, "replay", 0) if c.name == "dev_tv0")


@pytest.mark.timeout(300)
def test_a_television_talking_on_after_the_answer_is_no_turn_upstream() -> None:
    prompt = read_wav(CORPUS / prompt_clip(CORPUS))
    r = bargein_relay_replay.run(television(), prompt, VadRunner(), None, TV_AT_MS)
    assert not r.cut
    assert r.after == 0, f"the television became {r.after} turn(s) after the answer"
    assert r.upstream_speech == 0, "the upstream heard the television"


def reply_over(tv: Case, name: str, after_ms: int) -> tuple[Case, int]:
    """The user's reply ``name`` beginning (its labelled onset) ``after_ms`` after the
    answer's end, over the television; and that onset, in ms into the case's clip."""
    [speech] = [c for c in build_cases(CORPUS, ["replay"]) if c.name == name]
    assert tv.clip is not None and speech.clip is not None and speech.onset_ms is not None
    onset = ANSWER_MS - TV_AT_MS + after_ms
    start = (onset - speech.onset_ms) * RATE // 1000
    mix = np.zeros(max(tv.clip.size, start + speech.clip.size), np.float32)
    mix[: tv.clip.size] += tv.clip
    mix[start : start + speech.clip.size] += speech.clip
    return Case("replay", "speech", f"{tv.name}+{name}", mix, onset), onset


# Replays of 20-30 s of audio each: a few seconds on an idle machine, more under load.
REPLAY_TIMEOUT = pytest.mark.timeout(300)


@REPLAY_TIMEOUT
@pytest.mark.parametrize(("name", "after_ms"), [("utt00_clean.wav", 300), ("utt01_clean.wav", 800)])
def test_the_users_reply_over_that_television_is_a_turn(name: str, after_ms: int) -> None:
    """duplex_emulated: before, a reply inside the television's run was no turn at all."""
    prompt = read_wav(CORPUS / prompt_clip(CORPUS))
    case, _ = reply_over(television(), name, after_ms)
    turn = bargein_replay.run(case, prompt, VadRunner(), None, TV_AT_MS)
    assert turn.after >= 1, "the reply was no turn"


@REPLAY_TIMEOUT
@pytest.mark.parametrize(
    ("name", "after_ms", "most_lost_ms"),
    # utt00 300 ms after the answer: its first words under the television are not the
    # user's to the evidence until ~590 ms in (docs/fidelity.md, "Known gaps").
    [("utt01_clean.wav", 800, 0), ("utt00_clean.wav", 300, 500)],
)
def test_the_users_reply_over_that_television_goes_upstream(
    name: str, after_ms: int, most_lost_ms: int
) -> None:
    prompt = read_wav(CORPUS / prompt_clip(CORPUS))
    case, onset = reply_over(television(), name, after_ms)
    relay = bargein_relay_replay.run(case, prompt, VadRunner(), None, TV_AT_MS)
    assert relay.after >= 1 and relay.upstream_speech >= 1, "no turn upstream"
    lost = bargein_relay_replay.onset_lost_ms(relay, onset)
    assert 0 <= lost <= most_lost_ms, f"the reply's first {lost} ms never reached the upstream"


def windows(
    run: BackgroundRun, probs: list[float], speaking: list[bool], s: ShimSettings
) -> list[bool]:
    """Whether someone else's run goes on at each 32 ms window after the answer."""
    pairs = enumerate(zip(probs, speaking, strict=True))
    return [run.window(p >= 0.5, v, 512 * (i + 10), s) for i, (p, v) in pairs]


def test_it_ends_with_the_vads_stop_or_after_the_pause_configured() -> None:
    probs = [0.9, 0.1, 0.1, 0.1, 0.9, 0.1]
    speaking = [True, True, False, False, True, True]  # stopped at the third, again at the fifth
    run = BackgroundRun()
    run.dismissed(True, 512 * 9)
    assert windows(run, probs, speaking, ShimSettings()) == [True, True, False, False, False, False]
    run = BackgroundRun()
    run.dismissed(True, 512 * 9)
    paused = ShimSettings(background_pause_ms=100)  # a new run within it is theirs too
    assert windows(run, probs, speaking, paused) == [True, True, True, True, True, True]
    run = BackgroundRun()
    run.dismissed(False, 512 * 9)  # released as the user's (a backchannel): not theirs
    assert windows(run, probs, speaking, ShimSettings()) == [False] * 6


def test_the_pause_is_a_bounded_vad_setting() -> None:
    for config, ms in ((VadConfig(background_pause_ms=1500), 1500), (VadConfig(), 0)):
        state = SimpleNamespace(config=SimpleNamespace(vad=config))
        assert shim_settings(cast(Any, state)).background_pause_ms == ms
    with pytest.raises(ValidationError):
        VadConfig(background_pause_ms=5001)
    with pytest.raises(ValidationError):
        VadConfig(background_pause_ms=-1)
