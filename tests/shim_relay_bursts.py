"""A GA client's turn appended faster than real time, by script: 16 kHz audio as the 24 kHz
PCM16 a GA client sends, appended at once in 20 ms chunks, and what goes to the VAD."""

from __future__ import annotations

import numpy as np
import orjson

from shim.actions import AnalyzeAudio
from shim.audio import b64encode
from shim.inputs import ClientEvent
from tests.shim_script import Script

CHUNK_MS = 20


def to_pcm24(x16: np.ndarray) -> np.ndarray:
    """16 kHz int16 as the 24 kHz PCM16 a GA client sends."""
    t = np.arange(x16.size * 3 // 2) / 1.5
    return np.interp(t, np.arange(x16.size), x16.astype(np.float64)).astype("<i2")


def append_at_once(sc: Script, audio: np.ndarray) -> list[AnalyzeAudio]:
    """``audio`` (16 kHz) appended at once in 20 ms chunks; what goes to the VAD."""
    pcm = to_pcm24(audio)
    chunk = 24 * CHUNK_MS
    out: list[AnalyzeAudio] = []
    for i in range(0, pcm.size, chunk):
        ev = {"type": "input_audio_buffer.append", "audio": b64encode(pcm[i : i + chunk].tobytes())}
        got = sc.s.handle(ClientEvent(ev, orjson.dumps(ev).decode(), sc.now))
        out += [a for a in got if isinstance(a, AnalyzeAudio)]
    return out
