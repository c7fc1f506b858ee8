"""The answer's echo is still its echo when the microphone arrives late, or the answer
goes out late.

A client that sends its microphone in 300-500 ms chunks (or over a stalling uplink)
captures on time but delivers late. The answer's audio used to be placed for echo
suppression at the newest microphone sample received, so what was sent while the
client was behind was placed up to a chunk early: its echo came back later than the
suppressor's lock, passed as the user's voice, held the answer and, at -10 dB, cut it
(``shim/echo_clock.py``). Replayed in audio time through the session core with real
Silero (``bench/bargein_replay.py``), the dev corpus's question and answer, the chunks
captured on time and sent late from the answer's first audio on.

Likewise a session loop that is behind (under load, waiting on the VAD's bounded
queue) sends the upstream's audio later than the edge stamped it on arrival, by a lag
that grows and shrinks: the audio was placed from that stamp, ahead of where the client
played it, and its echo held the answer (and, through a room, cut it)."""

from __future__ import annotations

import sys

import pytest

from tests.servers import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import bargein_replay
from bargein_cases import build_cases, prompt_clip, read_wav
from bargein_replay import run

from proxy.vad import VadRunner
from shim.actions import SendClientAudio
from shim.dialects.turn_based import TurnBasedSession
from shim.inputs import ClientEvent

CORPUS = ROOT.parent / "shared" / "corpus" / "dev"


@pytest.mark.parametrize("stall", [(500, 480), (300, 280)], ids=["500ms", "300ms"])
@pytest.mark.parametrize("name", ["echo-10dB_120ms", "echo-10dB_250ms"])
def test_echo_sent_late_in_big_chunks_never_holds_the_answer(
    name: str, stall: tuple[int, int]
) -> None:
    prompt = read_wav(CORPUS / prompt_clip(CORPUS))
    case = next(c for c in build_cases(CORPUS, ["replay"]) if c.name == name)
    r = run(case, prompt, VadRunner(), None, uplink_stall=stall)
    held = [w["t"] for w in r.windows if w["holding"]]
    assert not held, f"{name} held the answer at {held[0]} ms"
    assert r.interrupted_ms is None and r.cut_ms is None


@pytest.mark.parametrize("backlog", [(2000, 600), (1000, 300)], ids=["600ms", "300ms"])
def test_echo_of_audio_sent_after_its_arrival_stamp_never_holds_the_answer(
    backlog: tuple[int, int],
) -> None:
    prompt = read_wav(CORPUS / prompt_clip(CORPUS))
    case = next(c for c in build_cases(CORPUS, ["replay"]) if c.name == "echo-10dB_120ms")
    r = run(case, prompt, VadRunner(), None, backlog=backlog)
    held = [w["t"] for w in r.windows if w["holding"]]
    assert not held, f"held the answer at {held[0]} ms"
    assert r.interrupted_ms is None and r.cut_ms is None


def test_a_barge_in_sent_late_in_big_chunks_still_cuts_the_answer() -> None:
    prompt = read_wav(CORPUS / prompt_clip(CORPUS))
    case = next(c for c in build_cases(CORPUS, ["replay"]) if c.name == "utt01_clean.wav")
    case.echo_gain, case.echo_delay_ms = 10 ** (-10 / 20), 120
    r = run(case, prompt, VadRunner(), None, uplink_stall=(500, 480))
    assert r.cut_ms is not None and r.interrupted_ms is not None


def test_the_clock_leads_by_what_a_late_client_has_captured_and_not_sent() -> None:
    from shim.echo_clock import MicClock

    clock = MicClock()
    for k in range(1, 51):  # on time: 20 ms chunks (320 samples) as they are captured
        clock.heard(320 * k, 20.0 * k)
    assert clock.lead(16000, 1010.0) == 0  # within a chunk of the newest
    for k in range(1, 5):  # then 500 ms chunks, each sent once captured
        clock.heard(16000 + 8000 * k, 1000.0 + 500 * k)
    assert clock.lead(48000, 3400.0) == 16 * (400 - 20)  # 400 ms captured since, less slack
    # Nothing for longer than the window: a client that stopped sending, not a late one.
    assert clock.lead(48000, 3000.0 + 1001) == 0


def test_audio_goes_out_no_earlier_than_the_newest_input_handled() -> None:
    from shim.echo_clock import MicClock

    clock = MicClock()
    clock.heard(320, 1000.0)
    assert clock.sent(900.0) == 1000.0  # stamped on arrival, handled after that input
    assert clock.play("a", 1000.0, 80.0) == 1000.0
    assert clock.play("a", 1010.0, 80.0) == 1080.0  # queued behind the first delta
    assert clock.play("b", 1020.0, 80.0) == 1020.0  # another item starts afresh


def _muted_after_a_second(mute_ms: int) -> type[TurnBasedSession]:
    """A session whose client sends nothing for ``mute_ms`` one second into the
    answer (a muted or gated microphone), then live audio again, on time."""

    class Muted(TurnBasedSession):
        first: float | None = None

        def handle(self, inp):  # type: ignore[no-untyped-def]
            if (
                isinstance(inp, ClientEvent)
                and inp.event.get("type") == "input_audio_buffer.append"
                and self.first is not None
                and self.first + 1000 <= inp.now_ms < self.first + 1000 + mute_ms
            ):
                return []
            out = super().handle(inp)
            if self.first is None and any(isinstance(a, SendClientAudio) for a in out):
                self.first = inp.now_ms
            return out

    return Muted


@pytest.mark.parametrize("mute_ms", [150, 300, 500])
def test_echo_after_a_short_mic_pause_never_holds_the_answer(
    monkeypatch: pytest.MonkeyPatch, mute_ms: int
) -> None:
    monkeypatch.setattr(bargein_replay, "TurnBasedSession", _muted_after_a_second(mute_ms))
    prompt = read_wav(CORPUS / prompt_clip(CORPUS))
    case = next(c for c in build_cases(CORPUS, ["replay"]) if c.name == "echo-10dB_120ms")
    r = run(case, prompt, VadRunner(), None)
    held = [w["t"] for w in r.windows if w["holding"]]
    assert not held, f"held the answer at {held[0]} ms ({len(held)} windows)"
    assert r.interrupted_ms is None and r.cut_ms is None


def test_a_client_that_pauses_and_resumes_on_time_is_not_late() -> None:
    from shim.echo_clock import MicClock

    clock = MicClock()
    for k in range(1, 101):  # 2 s on time: sample 32000 at 2000 ms
        clock.heard(320 * k, 20.0 * k)
    end = 32000  # nothing from 2000 to 2600 ms, then 20 ms chunks on time again
    for j in range(1, 6):
        end += 320
        clock.heard(end, 2600.0 + 20.0 * j)
    assert clock.lead(end, 2700.0) == 0
