"""The shim's cheap paths decide exactly what the full computation decides.

Echo suppression answers "nothing plays" without reading the far ring and passes
the microphone through without a frame matrix (``shim/echo_far.py``,
``shim/echo_ola.py``); a window's voicing is measured only when its class needs it
(``shim/overlap_evidence.py``). A duplex_emulated session hears dev-corpus speech,
answers with corpus speech whose echo comes back into the microphone, and is talked
over; real Silero scores what the shim hands the VAD. The whole action stream (each
event, and every sample given to the VAD, bit for bit) must be the same as with the
full computation: the suppressor's frames as they were computed before the cheap
paths (kept here), its far-activity check always reading the ring, and every
window's voicing measured at once.
"""

from __future__ import annotations

import hashlib
import json
import wave
from functools import cache
from typing import Any

import numpy as np
import pybase64
import soxr

from proxy.vad import VadRunner, VadStream
from shim.actions import Action, AnalyzeAudio, SendClient, SendClientAudio, SendUpstream
from shim.dialects.turn_based import TurnBasedSession
from shim.echo import EchoSuppressor
from shim.echo_far import FRAME, HOP, WIN
from shim.inputs import ClientEvent, Tick, UpstreamEvent, VadWindow
from shim.overlap_evidence import OverlapEvidence, WindowEvidence
from shim.session import ShimSettings
from shim.vad_gate import VadParams
from tests.corpus import CORPUS, needs_corpus

pytestmark = needs_corpus
# The client's audio, both ways, at the VAD's 16 kHz: no resampling in the session, as
# soxr's int16 streams add random dither (two runs of the same audio would differ).
RATE = 16000
CHUNK = RATE // 50  # 20 ms appends, as clients send them
ECHO_DELAY = RATE * 90 // 1000
ECHO_GAIN = 10 ** (-12 / 20)


@cache
def clip(name: str) -> np.ndarray:  # type: ignore[type-arg]
    with wave.open(str(CORPUS / name)) as w:
        x24 = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32)
    return np.round(soxr.resample(x24, 24000, RATE)).astype(np.float64)


class FullFrames(EchoSuppressor):
    """Every frame through the frame matrix and one overlap-add loop, as before the
    pass-through path; the far-activity check always reads the ring."""

    def __init__(self) -> None:
        super().__init__()
        self.far._loud_end = 2**62  # "something may play, forever": always look

    def _frames(self, suppress: bool) -> None:
        k = min(8, (self._xbuf.size - FRAME) // HOP + 1)
        idx = np.arange(k)[:, None] * HOP + np.arange(FRAME)
        xf = self._xbuf[idx]
        if suppress and self.delay is not None:
            y = self._suppressed(k, self.delay)
        else:
            y = xf * (WIN * WIN)
        acc = np.zeros((k + 1) * HOP, dtype=np.float32)
        acc[:HOP] = self._ola
        for i in range(k):
            acc[i * HOP : i * HOP + FRAME] += y[i]
        self._out = np.concatenate((self._out, acc[: k * HOP]))
        self._ola = acc[k * HOP :]
        self._xbuf = self._xbuf[k * HOP :]
        if self._rbuf is not None:  # (None: nothing subtracted, the same as _xbuf)
            self._rbuf = self._rbuf[k * HOP :]
        self._frame_start += k * HOP


class EagerEvidence(OverlapEvidence):
    """Every window's voicing measured when the window is."""

    def measure(
        self,
        prob: float,
        end_sample: int,
        far: np.ndarray | None = None,  # type: ignore[type-arg]
        decay: bool = False,
        echo: np.ndarray | None = None,  # type: ignore[type-arg]
    ) -> WindowEvidence:
        ev = super().measure(prob, end_sample, far, decay, echo)
        assert 0.0 <= ev.voicing <= 1.0
        return ev


def record(action: Action) -> str:
    if isinstance(action, AnalyzeAudio):
        digest = hashlib.sha256(np.ascontiguousarray(action.samples).tobytes()).hexdigest()
        return f"analyze {action.start_sample} {action.samples.dtype} {digest}"
    if isinstance(action, SendClient | SendClientAudio | SendUpstream):
        return f"{type(action).__name__} {json.dumps(action.event, sort_keys=True)}"
    return repr(action)


class Conversation:
    """The client plays what it gets at real-time pace; its echo comes back 12 dB down."""

    def __init__(self, session: TurnBasedSession, vad: VadRunner, user: np.ndarray) -> None:  # type: ignore[type-arg]
        self.s, self.vad, self.stream = session, vad, VadStream()
        self.user = user
        self.echo = np.zeros(user.size + 60 * RATE)
        self.played_to = 0  # client sample where its playback queue ends
        self.pos = 0
        self.log: list[str] = []
        self.replies = 0

    def now(self) -> float:
        return self.pos * 1000 / RATE

    def feed(self, inp: Any) -> None:
        actions = self.s.handle(inp)
        for a in actions:
            self.log.append(record(a))
        for a in actions:
            if isinstance(a, SendClient | SendClientAudio):
                self.client_gets(a.event)
            elif isinstance(a, AnalyzeAudio):
                for prob, end in self.vad.process_sync(self.stream, a.samples):
                    self.feed(VadWindow(prob, end, self.now()))
            elif isinstance(a, SendUpstream) and a.event == {
                "type": "input_audio_buffer.commit",
                "final": True,
            }:
                self.reply()

    def client_gets(self, ev: dict[str, Any]) -> None:
        if ev["type"] == "response.output_audio.delta":
            pcm = np.frombuffer(pybase64.b64decode(ev["delta"]), dtype="<i2")
            at = max(self.played_to, self.pos)
            self.echo[at + ECHO_DELAY : at + ECHO_DELAY + pcm.size] += pcm * ECHO_GAIN
            self.played_to = at + pcm.size
        elif ev["type"] == "output_audio_buffer.cleared" or (
            ev["type"] == "response.done" and ev["response"]["status"] == "cancelled"
        ):
            self.echo[self.pos + ECHO_DELAY :] = 0.0  # the client stops playing
            self.played_to = self.pos

    def reply(self) -> None:
        """The turn-based upstream answers at once with a corpus utterance."""
        voice = clip(["utt05_clean.wav", "utt08_clean.wav", "utt10_clean.wav"][self.replies % 3])
        self.replies += 1
        step = RATE // 10
        for i in range(0, voice.size, step):
            pcm = voice[i : i + step].astype("<i2").tobytes()
            self.upstream({"type": "transcription.delta", "delta": f"w{i} "})
            self.upstream(
                {
                    "type": "response.output_audio.delta",
                    "audio": pybase64.b64encode(pcm).decode(),
                    "format": "pcm16",
                    "sample_rate_hz": RATE,
                }
            )
        self.upstream({"type": "transcription.done", "text": "words"})
        self.upstream({"type": "response.output_audio.done", "has_audio": True})

    def upstream(self, ev: dict[str, Any]) -> None:
        self.feed(UpstreamEvent(ev, json.dumps(ev), self.now()))

    def run(self) -> list[str]:
        while self.pos + CHUNK <= self.user.size:
            mic = self.user[self.pos : self.pos + CHUNK] + self.echo[self.pos : self.pos + CHUNK]
            pcm = np.clip(mic, -32768, 32767).astype("<i2").tobytes()
            ev = {"type": "input_audio_buffer.append", "audio": pybase64.b64encode(pcm).decode()}
            self.pos += CHUNK
            self.feed(ClientEvent(ev, json.dumps(ev), self.now()))
            if self.pos % (3 * CHUNK) == 0:
                self.feed(Tick(self.now()))
        return self.log


def scenario() -> np.ndarray:  # type: ignore[type-arg]
    """Turns with long pauses (the answer and its echo alone), then a user who talks
    over the answer, a backchannel, and noise."""
    gap = np.zeros(RATE * 4)
    parts = [
        clip("utt00_clean.wav"),
        gap,
        gap,
        clip("utt03_clean.wav"),
        np.zeros(RATE * 2),  # the answer starts, then the user talks over it
        clip("utt01_clean.wav"),
        gap,
        clip("utt02_clean.wav"),
        np.zeros(RATE * 2),
        clip("backchannel01.wav"),
        gap,
        clip("noise_pink_05.wav") * 0.5,
        gap,
    ]
    return np.concatenate(parts)


def conversation(full: bool) -> tuple[list[str], TurnBasedSession]:
    settings = ShimSettings(vad=VadParams(), echo_suppression=True)
    session = TurnBasedSession("sess_0123456789abcdef", "demo", "demo-up", settings)
    pcm16k = {"format": {"type": "audio/pcm", "rate": RATE}}
    update = {"type": "realtime", "audio": {"input": pcm16k, "output": pcm16k}}
    refused = session.handle(ClientEvent({"type": "session.update", "session": update}, "", 0.0))
    assert not [a for a in refused if isinstance(a, SendClient) and a.event["type"] == "error"]
    if full:
        session.echo = FullFrames()
        session.evidence = EagerEvidence(session.echo.latency)
        session.output.echo = session.echo
    return Conversation(session, VadRunner(), scenario()).run(), session


def test_cheap_paths_decide_bit_for_bit_what_the_full_computation_decides() -> None:
    cheap, s1 = conversation(full=False)
    full, s2 = conversation(full=True)
    assert isinstance(s2.echo, FullFrames) and s2.output.echo is s2.echo
    assert cheap == full
    events = [line for line in cheap if not line.startswith("analyze")]
    # The scenario exercises what the paths must not change: turns, answers with
    # their echo suppressed, and speech over an answer (held, then decided).
    text = "\n".join(events)
    assert text.count("input_audio_buffer.committed") >= 3
    assert "conversation.item.truncated" in text, "the user talked over an answer"
    assert s1.echo is not None and s1.echo.delay is not None, "the echo was locked"
