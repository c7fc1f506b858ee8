"""The GA relay's microphone gate holds the microphone for as long as the echo
suppressor finds the answer's echo, not only for a fixed tail after its playback.

``barge_in_emulated`` holds the microphone back from the upstream while the answer
plays and for its echo tail after (``shim/dialects/relay_gate.py``). The tail was a
fixed 300 ms after the answer's end as the proxy estimates the client's playback;
a client that plays the answer later than that estimate (its own playout buffer, a
busy event loop) and a room's path add up to more, and the echo of the answer's last
words reached the upstream, whose VAD has no echo suppression: it took them for the
user's next turn and answered its own echo (the Agents SDK bench,
``bench/agents_sdk.py``). The suppressor locks onto where the echo really lies on the
microphone's timeline; the gate now holds until then, plus the tail.

Replayed through the relay in audio time with real Silero and the dev corpus's voice
(``bench/bargein_relay_replay.py``): the echo at -10/-20 dB, 350-400 ms after the
proxy places the answer's audio. By script: no sockets, no clock.
"""

from __future__ import annotations

import sys

import pytest

from tests.servers import ROOT

sys.path.insert(0, str(ROOT / "bench"))

from bargein_cases import Case, prompt_clip, read_wav
from bargein_relay_replay import run

from proxy.vad import VadRunner

CORPUS = ROOT.parent / "shared" / "corpus" / "dev"


@pytest.mark.parametrize("gain_db", [-10, -20])
@pytest.mark.parametrize("late_ms", [350, 400])
def test_a_late_echo_of_the_answers_last_words_never_reaches_the_upstream(
    gain_db: int, late_ms: int
) -> None:
    prompt = read_wav(CORPUS / prompt_clip(CORPUS))
    case = Case("replay", "echo", f"echo{gain_db}dB_{late_ms}ms", None, None)
    case.echo_gain, case.echo_delay_ms = 10 ** (gain_db / 20), late_ms
    r = run(case, prompt, VadRunner(), None)
    assert r.echo_ms == 0, "the echo of the answer's end reached the upstream"
    assert r.upstream_speech == 0 and r.told == 0 and not r.cut
