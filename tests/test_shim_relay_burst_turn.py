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
from shim.dialects.ga_relay import GaRelaySession
from shim.inputs import ClientEvent, Tick, UpstreamEvent, VadWindow
from shim.settings import ShimSettings
from tests.overlap_measures import clip16
from tests.shim_ga_relay_script import RID, answer_delta, make
from tests.shim_relay_bursts import CHUNK_MS, append_at_once, to_pcm24
from tests.shim_script import Script

DUPLEX_CAPS = {"supports_barge_in": True}


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
    pcm = to_pcm24(audio)
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


def test_the_onset_of_a_burst_turn_judged_after_its_answer_began_holds_nothing() -> None:
    """The user's level learnt from a first turn said more softly (on time, nothing
    playing); a second turn sent as a burst, answered at once, its windows judged while
    the answer streams: its first loud window, at the user's level, is the turn's own
    onset, not speech over the answer (no hold on it, and no cut)."""
    session = GaRelaySession("sess_0123456789abcdef", "m", ShimSettings(), DUPLEX_CAPS)
    session.bind_upstream({"type": "session.created", "session": {"id": "up-1"}})
    sc = Script(session)
    vad = VadRunner()
    stream = vad.new_stream()
    sc.client({"type": "session.update", "session": {"type": "realtime"}})
    clip = clip16("utt05_clean.wav")
    pause = np.zeros(16 * 900, np.int16)
    out: list[Action] = []
    for a in append_at_once(sc, np.concatenate([(clip * 0.5).astype(np.int16), pause])):
        for prob, end in vad.process_sync(stream, a.samples):  # on time
            sc.now += 8
            out += sc.s.handle(VadWindow(prob, end, sc.now))
    assert sc.s.evidence.user_level_db is not None
    windows = [
        w
        for a in append_at_once(sc, np.concatenate([clip, pause]))
        for w in vad.process_sync(stream, a.samples)
    ]
    upstream: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": RID}}]
    upstream += [answer_delta(sample_rate_hz=24000) for _ in range(10)]
    for n, ev in enumerate(upstream):
        ev = {**ev, "server_event_seq": 10 + n}
        out += sc.s.handle(UpstreamEvent(ev, orjson.dumps(ev).decode(), sc.now))
        for prob, end in windows[:2]:
            sc.now += 16
            out += sc.s.handle(VadWindow(prob, end, sc.now)) + sc.s.handle(Tick(sc.now))
        del windows[:2]
    for prob, end in windows:  # the answer still streaming
        sc.now += 8
        out += sc.s.handle(VadWindow(prob, end, sc.now)) + sc.s.handle(Tick(sc.now))
    done = {"type": "response.done", "response": {"id": RID, "status": "completed"}}
    out += sc.upstream({**done, "server_event_seq": 21})
    assert [e["response"]["status"] for e in _client(out) if e["type"] == "response.done"] == [
        "completed"
    ]
    assert sum(e["type"] == "response.output_audio.delta" for e in _client(out)) == 10
