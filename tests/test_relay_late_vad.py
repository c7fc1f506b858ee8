"""barge_in_emulated with the proxy's VAD behind its audio (a loaded process): its
results for the windows over the answer come back seconds after their audio. The
overlap evidence must still have that audio to measure them on (``overlap_keep_ms``):
measured on audio no longer kept, the user's words read as silence, are neither held
nor cut, and the relay's gate drops them with the answer's echo. Replayed in audio time
through the relay with real Silero on dev corpus audio (``bench/bargein_relay_replay.py
--vad-lag``); echo and a backchannel stay what they are however late.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest

from tests.servers import ROOT

sys.path.insert(0, str(ROOT / "bench"))

from bargein_cases import build_cases, prompt_clip, read_wav
from bargein_relay_replay import run

from proxy.config_vad import VadConfig
from proxy.emulated.shim_setup import shim_settings
from proxy.vad import VadRunner
from shim.dialects.ga_relay import GaRelaySession
from shim.inputs import VadWindow
from shim.settings import ShimSettings
from tests.overlap_measures import clip16
from tests.shim_relay_bursts import append_at_once
from tests.shim_script import Script

CORPUS = ROOT.parent / "shared" / "corpus" / "dev"


def _replayed(name: str, lag_ms: int) -> tuple[bool, bool]:
    """(told speech_started, answer cut) for the dev case ``name``, the VAD ``lag_ms``
    behind from the answer's first audio on."""
    prompt = read_wav(CORPUS / prompt_clip(CORPUS))
    case = next(c for c in build_cases(CORPUS, ["replay"]) if c.name == name)
    r = run(case, prompt, VadRunner(), None, vad_lag_ms=lag_ms)
    return r.told > 0, r.cut


@pytest.mark.parametrize("lag_ms", [1600, 3000])
def test_a_barge_in_judged_late_is_still_cut(lag_ms: int) -> None:
    assert _replayed("utt03_clean.wav", lag_ms) == (True, True)


@pytest.mark.parametrize("name", ["echo-10dB_120ms", "backchannel01.wav"])
def test_echo_and_a_backchannel_judged_late_do_not_interrupt(name: str) -> None:
    assert _replayed(name, 3000) == (False, False)


def test_how_much_audio_is_kept_is_the_operators() -> None:
    state = SimpleNamespace(config=SimpleNamespace(vad=VadConfig(overlap_keep_ms=8192)))
    settings = shim_settings(cast(Any, state))
    session = GaRelaySession("sess_0123456789abcdef", "m", settings, {"supports_barge_in": True})
    assert session.evidence.keep == 8192 * 16
    assert ShimSettings().overlap_keep == 65536, "4.1 s unless configured"


def test_windows_judged_after_their_audio_is_gone_teach_nothing_of_the_users_level() -> None:
    """A long turn with nothing playing, all its windows judged once 1 s of it is left
    kept (``overlap_keep_ms``): the windows measured on audio no longer kept read as
    silence, and the user's level is learnt from the others alone."""
    session = GaRelaySession("sess_0123456789abcdef", "m", ShimSettings(overlap_keep_ms=1024), {})
    session.bind_upstream({"type": "session.created", "session": {"id": "up-1"}})
    sc = Script(session)
    sc.client({"type": "session.update", "session": {"type": "realtime"}})
    vad = VadRunner()
    stream = vad.new_stream()
    speech = np.concatenate([clip16("utt05_clean.wav"), clip16("utt03_clean.wav")])
    windows = [w for a in append_at_once(sc, speech) for w in vad.process_sync(stream, a.samples)]
    for prob, end in windows:
        sc.now += 8
        sc.s.handle(VadWindow(prob, end, sc.now))
    level = session.evidence.user_level_db
    assert level is not None and level > -40, level
