"""One barge-in case replayed through the GA relay's session core, in audio time.

The replay ``bench/bargein_relay_replay.py`` runs on each case: the session
(``shim/dialects/ga_relay.py``) over a stand-in duplex upstream that answers the
question looped, in real time, and runs a VAD of its own on what the proxy forwards;
a client that plays what it gets and stops on ``speech_started``. What the client was
told, what the upstream's VAD heard, and what went upstream (``onset_lost_ms``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from bargein_cases import RATE, Case, echo_chunk
from replay_settings import replay_settings
from replay_stall import StalledProxy

from proxy.vad import VadRunner
from shim.actions import Action, AnalyzeAudio, SendClient, SendClientAudio, SendUpstream
from shim.audio import b64decode, b64encode
from shim.dialects.ga_relay import GaRelaySession
from shim.inputs import ClientEvent, Tick, UpstreamEvent, VadWindow
from shim.settings import ShimSettings

CHUNK_MS = 20
CHUNK = RATE * CHUNK_MS // 1000
RATE_IN = 16000  # the input timeline's (the VAD's) rate
REPLY_MS = 8000
PLAY_AFTER_MS = 1000
FIRST_DELTA_MS = 300  # the upstream's first audio after the question ends
UP_THRESHOLD, UP_MIN_SPEECH_MS = 0.5, 150  # the upstream's server VAD (shim/ga_upstream.py)
ECHO_FLOOR = 30.0  # a chunk carries echo when its echo's RMS exceeds this (int16 units)
RID = "resp-duplex-1-0-replay00"
AID = f"item_{RID}"


@dataclass
class RelayReplay:
    case: Case
    interrupted: bool = False  # speech_started before the answer was done or played out
    cut: bool = False  # the answer cancelled
    upstream_speech: int = 0  # runs of speech the upstream's VAD heard after the question
    told: int = 0  # speech_started the client was told after the answer began
    after: int = 0  # of those, with the answer completed (not cut) and played out: a new turn
    echo_ms: int = 0  # microphone audio carrying the answer's echo forwarded upstream
    clip_at: int | None = None  # where the clip begins on the input timeline (16 kHz)
    # The microphone audio forwarded upstream, as input spans ([start, end), 16 kHz).
    sent: list[tuple[int, int]] = field(default_factory=list)


def _upstream_vad_16k(pcm24: np.ndarray) -> np.ndarray:
    """The forwarded audio as the upstream's VAD reads it: 16 kHz float."""
    n = pcm24.size * 2 // 3
    x = np.interp(np.arange(n) * 1.5, np.arange(pcm24.size), pcm24.astype(np.float32))
    return (x / 32768.0).astype(np.float32)


def run(
    case: Case,
    prompt: np.ndarray,
    vad: VadRunner,
    proxy_stall: tuple[int, int] | None,
    clip_at_ms: int = PLAY_AFTER_MS,
    vad_lag_ms: int = 0,
    settings: ShimSettings | None = None,
) -> RelayReplay:
    """One case; its clip begins ``clip_at_ms`` after the answer's first audio (past
    ``REPLY_MS``: after the answer's end, and the replay goes on one second after it).
    From the answer's first audio on, the VAD's windows reach the session ``vad_lag_ms``
    after their audio was handled. ``settings``: the session's (``replay_settings()``
    unless given)."""
    if settings is None:
        settings = replay_settings()
    s = GaRelaySession("sess_replay000000", "m", settings, {"supports_barge_in": True})
    s.bind_upstream({"type": "session.created", "session": {"id": "up-1"}})
    stream, up_stream = vad.new_stream(), vad.new_stream()
    out = RelayReplay(case)
    speaker = np.zeros(RATE * 60, dtype=np.float32)
    play_end = 0
    reply = np.resize(prompt, RATE * REPLY_MS // 1000).astype(np.int16)
    reply_pos, reply_from, answering = 0, float(prompt.size * 1000 // RATE + FIRST_DELTA_MS), True
    first_delta = clip_t0 = end_ms = None
    completed = False  # the answer's response.done (completed) reached the client
    clip = case.clip if case.clip is not None else np.zeros(RATE * 4, np.float32)
    echo_in: dict[int, bool] = {}  # id of an append -> its chunk carries echo
    proxy = StalledProxy(s, proxy_stall)
    up_run, up_heard_from = 0, prompt.size * 1000 // RATE + 500  # after the question
    late: list[tuple[float, float, int]] = []  # VAD windows on their way: (due, prob, end)
    t = 0
    while end_ms is None or t * CHUNK_MS < end_ms:
        now = float(t * CHUNK_MS)
        since = None if first_delta is None else now - first_delta
        actions: list[Action] = proxy.tick(now, since)
        # The upstream: the answer in real time, from FIRST_DELTA_MS after the question.
        if answering and now >= reply_from:
            if reply_pos == 0:
                created = {"type": "response.created", "response": {"id": RID}}
                actions += proxy.handle(UpstreamEvent(created, "", now))
            if reply_pos < reply.size:
                ev: dict[str, Any] = {"type": "response.output_audio.delta"}
                ev |= {"response_id": RID, "item_id": AID, "output_index": 0}
                ev |= {"content_index": 0, "sample_rate_hz": RATE}
                ev["delta"] = b64encode(reply[reply_pos : reply_pos + CHUNK].tobytes())
                reply_pos += CHUNK
                actions += proxy.handle(UpstreamEvent(ev, "", now))
            else:
                done = {"type": "response.done", "response": {"id": RID, "status": "completed"}}
                actions += proxy.handle(UpstreamEvent(done, "", now))
                answering = False
        # The microphone: the question, the clip one second into the answer, the echo.
        mic = np.zeros(CHUNK, dtype=np.float32)
        p0 = t * CHUNK
        if p0 < prompt.size:
            seg = prompt[p0 : p0 + CHUNK]
            mic[: seg.size] += seg
        if first_delta is not None and now >= first_delta + clip_at_ms:
            if clip_t0 is None:
                clip_t0, out.clip_at = now, p0 * 2 // 3
                after = REPLY_MS if clip_at_ms < REPLY_MS else 1000
                end_ms = int(now + clip.size * 1000 / RATE + after)
            c0 = int((now - clip_t0) * RATE / 1000)
            seg = clip[c0 : c0 + CHUNK]
            mic[: seg.size] += seg
        echo = echo_chunk(case, speaker, p0, CHUNK)
        pcm = np.clip(mic + echo, -32768, 32767).astype("<i2").tobytes()
        append = {"type": "input_audio_buffer.append", "audio": b64encode(pcm)}
        echo_in[id(append)] = float(np.sqrt(np.mean(echo.astype(np.float64) ** 2))) > ECHO_FLOOR
        actions += proxy.handle(ClientEvent(append, "", now))
        for a in list(actions):
            if isinstance(a, AnalyzeAudio):
                lag = 0 if first_delta is None else vad_lag_ms
                late += [(now + lag, p, e) for p, e in vad.process_sync(stream, a.samples)]
        while late and late[0][0] <= now:
            _, prob, end = late.pop(0)
            actions += s.handle(VadWindow(prob, end, now))
        actions += [] if proxy.stalled else s.handle(Tick(now))
        # The upstream hears what the proxy forwards, with a VAD and no echo suppression.
        for a in actions:
            if not isinstance(a, SendUpstream) or a.event.get("type") != append["type"]:
                continue
            out.echo_ms += CHUNK_MS * echo_in.get(id(a.event), False)
            if a.span is not None:
                out.sent.append(a.span)
            up_pcm = np.frombuffer(b64decode(str(a.event["audio"])), "<i2")
            for prob, _ in vad.process_sync(up_stream, _upstream_vad_16k(up_pcm)):
                up_run = up_run + 32 if prob >= UP_THRESHOLD else 0
                if up_run == 32 * -(-UP_MIN_SPEECH_MS // 32) and now >= up_heard_from:
                    out.upstream_speech += 1
                    heard = {"type": "input_audio_buffer.speech_started", "audio_start_ms": 0}
                    actions += s.handle(UpstreamEvent(heard, "", now))
                    if answering or reply_pos:
                        if answering:  # a duplex upstream barges in on any speech
                            answering = False
                            done = {"type": "response.done"}
                            done["response"] = {"id": RID, "status": "cancelled"}
                            actions += s.handle(UpstreamEvent(done, "", now))
        # The client: plays audio, and stops playback on speech_started (a GA client).
        for a in actions:
            if isinstance(a, SendClientAudio):
                pcm16 = np.frombuffer(b64decode(a.event["delta"]), "<i2").astype(np.float32)
                start = max(play_end, p0)
                speaker[start : start + pcm16.size] = pcm16[: speaker.size - start]
                play_end = start + pcm16.size
                first_delta = now if first_delta is None else first_delta
            elif isinstance(a, SendClient):
                kind = a.event.get("type")
                if kind == "input_audio_buffer.speech_started" and first_delta is not None:
                    out.told += 1
                    # The answer is the client's until it is done: playing, held or
                    # still streaming, a speech_started stops it (a GA client).
                    out.interrupted |= play_end > p0 or answering or not completed
                    out.after += completed and not out.cut and play_end <= p0
                    speaker[p0:] = 0.0
                    play_end = min(play_end, p0)
                elif kind == "response.done" and a.event["response"].get("status") == "cancelled":
                    out.cut = True
                elif kind == "response.done":
                    completed = True  # what the client is told of next is a new turn
        t += 1
        if t * CHUNK_MS > 60_000:
            break
    return out


def onset_lost_ms(r: RelayReplay, onset_ms: int) -> int:
    """How much of a reply from its (labelled) onset on never went upstream: the
    first audio forwarded from a second before the clip on begins that much after."""
    assert r.clip_at is not None
    sent = [s for s, e in r.sent if e > r.clip_at - RATE_IN]
    if not sent:
        return -1  # nothing of it went
    return max(0, sent[0] - (r.clip_at + onset_ms * RATE_IN // 1000)) * 1000 // RATE_IN
