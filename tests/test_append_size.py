"""What is interrupted does not depend on how much audio each append carries.

Browser recorders send the microphone in appends of 100-170 ms, telephony in 20 ms. A
100 ms append is one event to the proxy: decoded, resampled and cut into VAD windows
at once, the echo placed against five times as much microphone. Replayed in audio time
through the session core with real Silero (``bench/bargein_replay.py``,
``mic_chunk_ms``), the dev corpus's question and answer: the answer's echo never holds
the answer, a backchannel never interrupts it, and a barge-in still cuts it, with the
audio stopping no later than one append's worth after it would in 20 ms appends."""

from __future__ import annotations

import sys

import pytest

from tests.servers import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import bargein_replay
from bargein_cases import Case, build_cases, prompt_clip, read_wav
from bargein_replay import run

from proxy.vad import VadRunner

CORPUS = ROOT.parent / "shared" / "corpus" / "dev"
SIZES_MS = [100, 160]


def case(name: str) -> Case:
    return next(c for c in build_cases(CORPUS, ["replay"]) if c.name == name)


@pytest.mark.parametrize("append_ms", SIZES_MS)
@pytest.mark.parametrize("name", ["echo-10dB_120ms", "backchannel00.wav"])
def test_echo_and_backchannels_in_long_appends_never_interrupt(name: str, append_ms: int) -> None:
    prompt = read_wav(CORPUS / prompt_clip(CORPUS))
    r = run(case(name), prompt, VadRunner(), None, mic_chunk_ms=append_ms)
    assert r.played, "the answer never played"
    assert r.interrupted_ms is None and r.cut_ms is None


@pytest.mark.parametrize("append_ms", SIZES_MS)
def test_a_barge_in_in_long_appends_cuts_the_answer_an_append_later_at_most(
    append_ms: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    prompt = read_wav(CORPUS / prompt_clip(CORPUS))
    speech = case("utt01_clean.wav")
    short = run(speech, prompt, VadRunner(), None)
    sizes: list[int] = []  # bytes of every audio payload encoded (appends and deltas)
    encode = bargein_replay.b64encode

    def counted(pcm: bytes) -> str:
        sizes.append(len(pcm))
        return encode(pcm)

    monkeypatch.setattr(bargein_replay, "b64encode", counted)
    long = run(speech, prompt, VadRunner(), None, mic_chunk_ms=append_ms)
    assert max(sizes) == append_ms * 48  # the appends were that long (24 kHz PCM16)
    assert short.cut_ms is not None and short.stop_ms is not None
    assert long.cut_ms is not None and long.interrupted_ms is not None
    assert long.stop_ms is not None
    assert long.stop_ms <= short.stop_ms + append_ms
