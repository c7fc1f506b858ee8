"""barge_in_emulated: a turn the client sends faster than real time, whose VAD results
come back after the upstream has begun answering it.

The upstream (a duplex one, taking turns by its own VAD) hears the whole burst at once,
commits it and answers; the proxy's VAD is still working through the same audio. Its
windows are the turn being answered, not speech over the answer: the answer plays in
full. Real Silero on a dev corpus utterance; time is the script's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson

from proxy.vad import VadRunner
from shim.actions import Action, AnalyzeAudio, SendClient, SendClientAudio, SendUpstream
from shim.audio import b64encode
from shim.inputs import ClientEvent, Tick, UpstreamEvent, VadWindow
from tests.test_overlap_evidence import clip16
from tests.test_shim_ga_relay import RID, answer_delta, make

CHUNK_MS = 20


def _pcm24(x16: np.ndarray) -> np.ndarray:
    """16 kHz int16 as the 24 kHz PCM16 a GA client sends."""
    t = np.arange(x16.size * 3 // 2) / 1.5
    return np.interp(t, np.arange(x16.size), x16.astype(np.float64)).astype("<i2")


def _burst_turn(silence_ms: int, judged_ms: int) -> list[Action]:
    """The utterance and ``silence_ms`` of silence appended at once; the VAD has judged
    its first ``judged_ms`` when the upstream answers (10 deltas of 100 ms, done); the
    rest of its windows come back one per 8 ms of the script's time meanwhile (a VAD
    working through a queue)."""
    sc = make()
    vad = VadRunner()
    stream = vad.new_stream()
    sc.client({"type": "session.update", "session": {"type": "realtime"}})
    audio = np.concatenate([clip16("utt05_clean.wav"), np.zeros(16 * silence_ms, np.int16)])
    pcm = _pcm24(audio)
    chunk = 24 * CHUNK_MS
    out: list[Action] = []
    windows: list[tuple[float, int]] = []
    for i in range(0, pcm.size, chunk):
        ev = {"type": "input_audio_buffer.append", "audio": b64encode(pcm[i : i + chunk].tobytes())}
        got = sc.s.handle(ClientEvent(ev, orjson.dumps(ev).decode(), sc.now))
        out += got
        for a in got:
            if isinstance(a, AnalyzeAudio):
                windows += vad.process_sync(stream, a.samples)
    while windows and windows[0][1] <= 16 * judged_ms:
        prob, end = windows.pop(0)
        out += sc.s.handle(VadWindow(prob, end, sc.now))
        sc.now += 8
    upstream: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": RID}}]
    upstream += [answer_delta(sample_rate_hz=24000) for _ in range(10)]
    upstream.append({"type": "response.done", "response": {"id": RID, "status": "completed"}})
    for n, ev in enumerate(upstream):
        ev = {**ev, "server_event_seq": 10 + n}
        out += sc.s.handle(UpstreamEvent(ev, orjson.dumps(ev).decode(), sc.now))
        for _ in range(12):  # the VAD catches up while the answer streams
            if windows:
                prob, end = windows.pop(0)
                out += sc.s.handle(VadWindow(prob, end, sc.now))
            sc.now += 8
            out += sc.s.handle(Tick(sc.now))
    while windows:
        prob, end = windows.pop(0)
        out += sc.s.handle(VadWindow(prob, end, sc.now))
        sc.now += 8
    for _ in range(100):
        sc.now += 50
        out += sc.s.handle(Tick(sc.now))
    return out


def _client(out: list[Action]) -> list[dict[str, Any]]:
    return [a.event for a in out if isinstance(a, SendClient | SendClientAudio)]


def test_a_burst_turn_answered_before_its_vad_caught_up_is_answered_in_full() -> None:
    for silence_ms, judged_ms in ((300, 1200), (900, 1200), (300, 2000)):
        out = _burst_turn(silence_ms, judged_ms)
        done = [e for e in _client(out) if e["type"] == "response.done"]
        assert [d["response"]["status"] for d in done] == ["completed"], (
            silence_ms,
            judged_ms,
            done,
        )
        deltas = [e for e in _client(out) if e["type"] == "response.output_audio.delta"]
        assert len(deltas) == 10, (silence_ms, judged_ms, len(deltas))
        cleared = [
            a.event
            for a in out
            if isinstance(a, SendUpstream) and a.event["type"] == "output_audio_buffer.clear"
        ]
        assert not cleared, (silence_ms, judged_ms, cleared)
