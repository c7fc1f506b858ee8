"""The GA relay's microphone gate when the proxy handles its inputs late.

``barge_in_emulated`` holds the microphone back from the upstream while the answer
plays and for its echo tail after (``shim/dialects/relay_gate.py``). A proxy short of
CPU handles its inputs later than the edge read them: the client's audio is handled
``LAG_MS`` after it came, the upstream's answer too, and the answer reaches the client
(and its echo the microphone) only when it is handled. The gate dated the microphone
by when its audio was handled and the answer's end by when the upstream's deltas were
read: it opened about twice the lag early, and the upstream (whose own VAD has no echo
suppression) heard the tail of the answer's echo. By script, in injected time: a
client streaming in real time, every input handled ``LAG_MS`` after it was read.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import orjson
import pytest

from shim.actions import Action, SendClientAudio, SendUpstream
from shim.audio import b64encode
from shim.echo_run import ECHO_TAIL_MS
from shim.inputs import ClientEvent, Input, Tick, UpstreamEvent, VadWindow
from tests.servers import ROOT
from tests.shim_ga_relay_script import RID, answer_delta, make
from tests.shim_ga_turn_steps import SILENCE, first_turn
from tests.shim_script import WINDOW

sys.path.insert(0, str(ROOT / "bench"))

from bargein_cases import build_cases, prompt_clip, read_wav
from bargein_relay_replay import run

from proxy.vad import VadRunner

CORPUS = ROOT.parent / "shared" / "corpus" / "dev"
CHUNK_MS = 32  # one VAD window per append
ANSWER_CHUNKS = 10  # 100 ms deltas, each read as the previous one ends
ECHO_DELAY_MS = 120  # the echo reaches the microphone this late (within the tail)


def _append(ms: int, peak: int) -> dict[str, Any]:
    n = 24_000 * ms // 1000
    wave = np.sin(2 * np.pi * 140 * np.arange(n) / 24_000) * peak
    return {"type": "input_audio_buffer.append", "audio": b64encode(wave.astype("<i2").tobytes())}


def _replay(lag_ms: float) -> tuple[list[tuple[float, dict[str, Any]]], list[Action], float]:
    """The answer, the client streaming its microphone meanwhile and after, every input
    handled ``lag_ms`` after it was read. Returns each append with when its audio was
    captured (its start, ms), what the session did, and when the answer's last audio
    reached the client (the answer's end where the client plays it)."""
    sc = make()
    first_turn(sc)  # on time
    t0 = sc.now + 100  # the answer's first delta is read then
    inputs: list[tuple[float, int, Input]] = []  # (read ms, order, input)
    created = {"type": "response.created", "response": {"id": RID}}
    inputs.append((t0, 0, _upstream(created, t0)))
    for n in range(ANSWER_CHUNKS):
        inputs.append((t0 + 100 * n, len(inputs), _upstream(answer_delta(), t0 + 100 * n)))
    done = {"type": "response.done", "response": {"id": RID, "status": "completed"}}
    last = t0 + 100 * (ANSWER_CHUNKS - 1)
    inputs.append((last, len(inputs), _upstream(done, last)))
    # The microphone, in real time from the answer's first delta on: the answer's echo
    # (as loud as the user: no cue in its level) from when it plays at the client,
    # which is when the proxy handled each delta.
    plays_from, plays_to = t0 + lag_ms, last + 100 + lag_ms
    captures: list[float] = []
    t = t0
    while t < plays_to + 1500:
        echo = plays_from + ECHO_DELAY_MS <= t < plays_to + ECHO_DELAY_MS
        captures.append(t)
        inputs.append((t + CHUNK_MS, len(inputs), _client(_append(CHUNK_MS, 3000 * echo), 0.0)))
        t += CHUNK_MS
    out: list[Action] = []
    appends: list[tuple[float, dict[str, Any]]] = []
    vad_end = sc.vad_end
    for read, _, inp in sorted(inputs, key=lambda x: (x[0], x[1])):
        handled = read + lag_ms
        if isinstance(inp, ClientEvent):  # stamped when handled, with when it was read
            inp = ClientEvent(inp.event, inp.raw, handled, read)
            appends.append((captures[len(appends)], inp.event))
        out += sc.s.handle(inp)
        if isinstance(inp, ClientEvent):
            # The proxy's VAD hears no speech: its echo suppressor takes the echo out.
            vad_end += WINDOW
            out += sc.s.handle(VadWindow(SILENCE, vad_end, handled))
        out += sc.s.handle(Tick(handled))
    return appends, out, plays_to


def _upstream(ev: dict[str, Any], read: float) -> UpstreamEvent:
    return UpstreamEvent(ev, orjson.dumps(ev).decode(), read)  # stamped when read


def _client(ev: dict[str, Any], read: float) -> ClientEvent:
    return ClientEvent(ev, orjson.dumps(ev).decode(), read)


def _echo_passed(lag_ms: float) -> list[float]:
    """When the appends the upstream heard within the answer and its echo were captured."""
    appends, out, plays_to = _replay(lag_ms)
    went = {id(a.event) for a in out if isinstance(a, SendUpstream)}
    assert any(isinstance(a, SendClientAudio) for a in out)
    heard = [at for at, ev in appends if id(ev) in went]
    assert heard, "the microphone reaches the upstream again after the answer"
    return [at for at in heard if at < plays_to + ECHO_DELAY_MS]


def test_on_time_the_answer_and_its_echo_stay_held() -> None:
    assert _echo_passed(0.0) == []


@pytest.mark.parametrize("lag_ms", [150.0, 300.0, 600.0])
def test_handled_late_the_answers_echo_tail_still_stays_held(lag_ms: float) -> None:
    assert lag_ms + ECHO_DELAY_MS < 2 * lag_ms + ECHO_TAIL_MS
    assert _echo_passed(lag_ms) == [], "the echo's tail reached the upstream"


@pytest.mark.parametrize("name", ["echo-10dB_120ms", "echo-20dB_250ms"])
def test_the_dev_echo_with_the_proxy_stalling_never_reaches_the_upstream(name: str) -> None:
    """Replayed through the relay with real Silero (``bench/bargein_relay_replay.py``):
    the session handles nothing for 500 ms of every second from the answer's first
    audio; the upstream's own VAD hears what the proxy forwards."""
    prompt = read_wav(CORPUS / prompt_clip(CORPUS))
    case = next(c for c in build_cases(CORPUS, ["replay"]) if c.name == name)
    r = run(case, prompt, VadRunner(), (1000, 500))
    assert r.echo_ms == 0, "the answer's echo reached the upstream"
    assert r.upstream_speech == 0 and r.told == 0, "speech_started on the answer's echo"
