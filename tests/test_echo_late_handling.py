"""The answer's echo is still its echo when the proxy handles the microphone late.

A proxy short of CPU handles its inputs in bursts, later than they arrived. The
microphone's clock (``shim/echo_clock.py``) dated the capture by when each chunk was
handled: a burst's chunks, all handled at once, looked like a client that had paused
and resumed (the clock started afresh) and then like one that was that far behind,
so the answer's audio sent amid a burst was placed as early on the microphone's
timeline as the burst was late, its echo came back after the suppressor looked for
it and held the answer. The edge now says when each client event was read, and the
clock dates the capture by that. Replayed in audio time through the session core
with real Silero (``bench/bargein_replay.py`` ``proxy_stall``), the dev corpus's
question and answer."""

from __future__ import annotations

import sys

import pytest

from tests.servers import ROOT

sys.path.insert(0, str(ROOT / "bench"))

from bargein_cases import build_cases, prompt_clip, read_wav
from bargein_replay import run

from proxy.client_frames import ClientFrame, parse_client_frame
from proxy.vad import VadRunner
from shim.echo_clock import MicClock

CORPUS = ROOT.parent / "shared" / "corpus" / "dev"


@pytest.mark.parametrize("stall", [(1000, 300), (2000, 800)], ids=["300ms", "800ms"])
@pytest.mark.parametrize("name", ["echo-10dB_120ms", "echo-10dB_250ms"])
def test_echo_handled_late_in_bursts_never_holds_the_answer(
    name: str, stall: tuple[int, int]
) -> None:
    prompt = read_wav(CORPUS / prompt_clip(CORPUS))
    case = next(c for c in build_cases(CORPUS, ["replay"]) if c.name == name)
    r = run(case, prompt, VadRunner(), None, proxy_stall=stall)
    held = [w["t"] for w in r.windows if w["holding"]]
    assert not held, f"{name} held the answer at {held[0]} ms ({len(held)} windows)"
    assert r.interrupted_ms is None and r.cut_ms is None


def test_the_clock_dates_a_burst_handled_late_by_when_it_arrived() -> None:
    clock = MicClock()
    for k in range(1, 51):  # 1 s on time: 20 ms chunks, handled as they arrive
        clock.arrival = None
        clock.heard(320 * k, 20.0 * k)
    # The proxy stalls 300 ms, then handles the chunks that arrived meanwhile at once.
    for k in range(51, 66):
        clock.arrival = 20.0 * k
        clock.heard(320 * k, 1300.0)
        # Amid the burst the capture is where it is now, not at the newest handled
        # (less the slack: the burst's last chunk is on time).
        assert clock.lead(320 * k, 1300.0) == max(0, 320 * 65 - 320 * k - 16 * 20)


def test_a_client_frame_says_when_it_was_read() -> None:
    frame = parse_client_frame('{"type": "input_audio_buffer.append", "audio": ""}')
    assert isinstance(frame, ClientFrame) and frame.read_ms is not None
