"""barge_in_emulated: speech over the answer that the proxy's VAD judges only after the
answer has played out (the VAD, or the session, seconds behind under load).

The relay's gate holds the microphone from the upstream while the answer plays and
drops what was said then unless the overlap was decided the user's (``relay_gate.py``).
So the overlap must be judged by where its audio lies (before the answer's end on the
input timeline, as the gate judges it), not by when its VAD windows come back: else the
windows find nothing playing, no overlap is held, and the gate drops the user's words.
Real Silero on dev corpus clips; time is the script's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson

from proxy.vad import VadRunner
from shim.actions import Action, SendClient, SendClientAudio, SendUpstream
from shim.audio import b64encode
from shim.inputs import ClientEvent, Tick, VadWindow
from tests.overlap_measures import clip16
from tests.shim_ga_relay_script import RID, answer_delta, make
from tests.shim_relay_bursts import to_pcm24

CHUNK_MS = 20
ANSWER_MS = 3000
LEAD_MS = 100  # each clip from this long before its speech (as bench/resume_overlap.py)
SPEECH_MS = {"utt05_clean.wav": 400, "utt09_clean.wav": 710}


def _late(clip: str, lag_ms: int) -> tuple[list[Action], int]:
    """An answer of ``ANSWER_MS`` streamed in real time; 300 ms into it the client says
    ``clip`` (in real time, 20 ms appends); the VAD's windows from the clip's start on
    come back ``lag_ms`` after their audio. Returns the actions and the input sample
    where the clip begins."""
    sc = make()
    vad = VadRunner()
    stream = vad.new_stream()
    sc.client({"type": "session.update", "session": {"type": "realtime"}})
    speech = clip16(clip)[16 * (SPEECH_MS[clip] - LEAD_MS) :]
    mic = np.concatenate([np.zeros(16 * 800, np.int16), speech, np.zeros(16 * 3000, np.int16)])
    onset = 16 * (800 + LEAD_MS)  # where the speech begins on the input timeline
    pcm = to_pcm24(mic)
    chunk = 24 * CHUNK_MS
    out: list[Action] = []
    late: list[tuple[float, float, int]] = []  # (due ms, prob, end sample)
    deltas = ANSWER_MS // 100
    sent = 0
    for n, i in enumerate(range(0, pcm.size, chunk)):
        sc.now = n * CHUNK_MS
        if n * CHUNK_MS == 500:  # the answer begins
            created = {"type": "response.created", "response": {"id": RID}}
            out += sc.upstream({**created, "server_event_seq": 10})
        if n * CHUNK_MS >= 500 and (n * CHUNK_MS - 500) % 100 == 0 and sent < deltas:
            sent += 1
            out += sc.upstream(
                {**answer_delta(sample_rate_hz=24000), "server_event_seq": 10 + sent}
            )
            if sent == deltas:
                done = {"type": "response.done", "response": {"id": RID, "status": "completed"}}
                out += sc.upstream({**done, "server_event_seq": 11 + sent})
        ev = {"type": "input_audio_buffer.append", "audio": b64encode(pcm[i : i + chunk].tobytes())}
        got = sc.s.handle(ClientEvent(ev, orjson.dumps(ev).decode(), sc.now))
        out += got
        for a in got:
            if not hasattr(a, "samples"):
                continue
            for prob, end in vad.process_sync(stream, a.samples):
                lag = lag_ms if end > onset - 16 * LEAD_MS else 0
                late.append((sc.now + lag, prob, end))
        while late and late[0][0] <= sc.now:
            _, prob, end = late.pop(0)
            out += sc.s.handle(VadWindow(prob, end, sc.now))
        out += sc.s.handle(Tick(sc.now))
    for due, prob, end in late:
        sc.now = max(sc.now, due)
        out += sc.s.handle(VadWindow(prob, end, sc.now)) + sc.s.handle(Tick(sc.now))
    for _ in range(100):
        sc.now += 50
        out += sc.s.handle(Tick(sc.now))
    return out, onset


def _upstream_spans(out: list[Action]) -> list[tuple[int, int]]:
    return [
        a.span
        for a in out
        if isinstance(a, SendUpstream)
        and a.event["type"] == "input_audio_buffer.append"
        and a.span is not None
    ]


def _client(out: list[Action]) -> list[dict[str, Any]]:
    return [a.event for a in out if isinstance(a, SendClient | SendClientAudio)]


def test_a_barge_in_judged_after_the_answer_played_out_still_reaches_the_upstream() -> None:
    for clip, lag_ms in (("utt05_clean.wav", 3000), ("utt09_clean.wav", 3500)):
        out, onset = _late(clip, lag_ms)
        spans = _upstream_spans(out)
        # The user's words from their onset on go to the upstream (which answers them).
        assert any(s <= onset + 16 * 200 < e for s, e in spans), (clip, spans[:3], onset)
        # Never cut after it completed: the answer had played out.
        events = _client(out)
        done = [e["response"]["status"] for e in events if e["type"] == "response.done"]
        assert done == ["completed"], (clip, done)
        assert not [e for e in events if e["type"] == "conversation.item.truncated"], clip
        # The upstream takes that turn itself: the proxy tells no speech_stopped of its own
        # for speech it never told the client had started.
        told = [e["type"] for e in events if e["type"].startswith("input_audio_buffer.speech")]
        assert told == [], (clip, told)


def test_a_barge_in_judged_in_time_is_cut_as_before() -> None:
    out, onset = _late("utt05_clean.wav", lag_ms=0)
    events = _client(out)
    done = [e["response"]["status"] for e in events if e["type"] == "response.done"]
    assert done == ["cancelled"], done
    assert any(s <= onset + 16 * 200 < e for s, e in _upstream_spans(out))
