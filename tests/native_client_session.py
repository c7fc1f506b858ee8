"""A vLLM-Omni-native client's session through the proxy, as ``DuplexClient`` opens and
speaks it (``?duplex=1&autostart=0``, its opening ``session.update``, 200 ms appends
naming their format and rate), in front of a strict stand-in
(tests/test_native_*.py and others).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import numpy as np
import pybase64
import soxr

from proxy.reference import ReferenceOptions
from tests.servers import Client, connect, proxy, proxy_config, reference, ws_url

NATIVE = {"duplex": "1", "autostart": "0"}


def pcm16k(pcm24: bytes) -> bytes:
    """24 kHz corpus PCM16 as the client's 16 kHz PCM16."""
    samples = np.frombuffer(pcm24, dtype="<i2")
    out: np.ndarray = soxr.resample(samples, 24000, 16000)
    return out.astype("<i2").tobytes()


def opening(**session: Any) -> dict[str, Any]:
    """The ``session.update`` vLLM-Omni's ``DuplexClient`` opens with."""
    body = {
        "model": "m",
        "modalities": ["audio", "text"],
        "input_audio_format": "pcm16",
        "output_audio_format": "pcm16",
        "sample_rate_hz": 16000,
        "audio": {"input": {"sample_rate_hz": 16000}, "output": {"sample_rate_hz": 24000}},
        "turn_detection": None,
        "extra_body": {"auto_response": True},
    }
    return {"type": "session.update", "session": body | session}


@asynccontextmanager
async def native_session(
    kind: str, mode: str, reply_ms: int = 1000, opened: dict[str, Any] | None = None
) -> AsyncIterator[Client]:
    """A native client's session through the proxy in front of a strict ``kind``
    stand-in, opened as ``DuplexClient`` opens (or with ``opened``) and served in
    ``mode``."""
    options = ReferenceOptions(fidelity="strict")
    async with (
        reference(kind, reply_ms=reply_ms, options=options) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
        connect(ws_url(base, **NATIVE)) as c,
    ):
        await c.send(opened or opening())
        created = await c.until("session.created")
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        yield c


async def say(c: Client, pcm: bytes, fmt: str = "pcm16", rate: int = 16000) -> None:
    """Append ``pcm`` as ``DuplexClient`` does (200 ms appends naming format and rate)."""
    step = rate * 2 // 5 if fmt == "pcm16" else rate // 5
    for i in range(0, len(pcm), step):
        chunk = pybase64.b64encode(pcm[i : i + step]).decode()
        await c.send(
            {
                "type": "input_audio_buffer.append",
                "audio": chunk,
                "format": fmt,
                "sample_rate_hz": rate,
            }
        )
