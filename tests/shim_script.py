"""Helpers to drive a shim session by script: audio, VAD probabilities, upstream events.

No sockets and no clock: time is whatever the script says (the shim is sans-I/O).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shim.actions import Action, AnalyzeAudio, SendClient, SendClientAudio, SendUpstream
from shim.audio import b64encode
from shim.inputs import ClientEvent, UpstreamEvent, VadWindow
from shim.session import EmulatedSession

WINDOW = 512  # samples per VAD window at 16 kHz = 32 ms


class Script:
    def __init__(self, session: EmulatedSession, client_rate: int | None = None) -> None:
        self.s = session
        # Untagged appends at the session's input rate (24 kHz GA, 16 kHz native).
        self.rate = client_rate or session.config.input_format.rate_hz
        self.now = 0.0
        self.vad_end = 0  # samples of 16 kHz audio already given probabilities
        self._voice_pos = 0

    def client(self, event: dict[str, Any]) -> list[Action]:
        import orjson

        return self.s.handle(ClientEvent(event, orjson.dumps(event).decode(), self.now))

    def upstream(self, event: dict[str, Any]) -> list[Action]:
        import orjson

        return self.s.handle(UpstreamEvent(event, orjson.dumps(event).decode(), self.now))

    def audio(self, ms: int, amplitude: int = 0) -> list[Action]:
        n = self.rate * ms // 1000
        samples = (np.ones(n) * amplitude).astype("<i2")
        return self.client(
            {"type": "input_audio_buffer.append", "audio": b64encode(samples.tobytes())}
        )

    def voice(self, ms: int, peak: int = 4000) -> list[Action]:
        """Client audio that sounds like one close talker: a 140 Hz voiced tone."""
        n = self.rate * ms // 1000
        t = (np.arange(n) + self._voice_pos) / self.rate
        self._voice_pos += n
        wave = sum(np.sin(2 * np.pi * 140 * h * t) / h for h in range(1, 6))
        samples = (wave / np.max(np.abs(wave)) * peak).astype("<i2")
        return self.client(
            {"type": "input_audio_buffer.append", "audio": b64encode(samples.tobytes())}
        )

    def speak(self, probs: list[float], step_ms: float = 32.0, peak: int = 4000) -> list[Action]:
        """Client audio plus one VAD probability per 32 ms window, time advancing.

        Windows the VAD scores as speech carry a voice at the user's level, silence
        otherwise, so the overlap evidence (``shim/overlap_evidence.py``) agrees."""
        out: list[Action] = []
        for p in probs:
            self.now += step_ms
            out += self.voice(32, peak) if p >= 0.5 else self.audio(32)
            self.vad_end += WINDOW
            out += self.s.handle(VadWindow(p, self.vad_end, self.now))
        return out

    def tick(self, ms: float) -> list[Action]:
        from shim.inputs import Tick

        self.now += ms
        return self.s.handle(Tick(self.now))


def detection(sc: Script, on: bool) -> None:
    """Server VAD on, or turn detection off (push-to-talk), by a GA session.update."""
    td = {"type": "server_vad"} if on else None
    sc.client(
        {
            "type": "session.update",
            "session": {"type": "realtime", "audio": {"input": {"turn_detection": td}}},
        }
    )


def client_events(actions: list[Action]) -> list[dict[str, Any]]:
    return [a.event for a in actions if isinstance(a, SendClient | SendClientAudio)]


def types(actions: list[Action]) -> list[str]:
    return [str(e["type"]) for e in client_events(actions)]


def upstream_events(actions: list[Action]) -> list[dict[str, Any]]:
    return [a.event for a in actions if isinstance(a, SendUpstream)]


def analyzed(actions: list[Action]) -> list[AnalyzeAudio]:
    return [a for a in actions if isinstance(a, AnalyzeAudio)]


def pcm_b64(ms: int, rate: int, amplitude: int = 1000) -> str:
    n = rate * ms // 1000
    t = np.arange(n) / rate
    return b64encode((np.sin(2 * np.pi * 220 * t) * amplitude).astype("<i2").tobytes())
