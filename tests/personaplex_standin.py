"""The strict PersonaPlex stand-in on loopback, and the float audio it takes.

``standin`` serves the reference backend with the PersonaPlex profile
(``proxy/reference/personaplex_frames.py`` buffers its input in 80 ms units) and
yields its URL with every session's model input; ``float_payload`` is 24 kHz
``pcm_f32le`` audio as its appends carry it.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import numpy as np

from proxy.reference.options import ReferenceOptions
from proxy.reference.personaplex_frames import PersonaPlexFrames
from proxy.reference.server import DUPLEX_BACKEND, build_reference_app
from tests.servers import serve_app

PERSONAPLEX = ReferenceOptions(fidelity="strict", profile="personaplex")


@asynccontextmanager
async def standin(
    options: ReferenceOptions = PERSONAPLEX, reply_ms: int = 800
) -> AsyncIterator[tuple[str, list[PersonaPlexFrames]]]:
    """The PersonaPlex stand-in; yields its URL and every session's model input."""
    app = build_reference_app("duplex-no-barge-in", reply_ms=reply_ms, options=options)
    async with serve_app(app) as base:
        url = base.replace("http://", "ws://") + "/v1/realtime?duplex=1&autostart=0"
        yield url, app[DUPLEX_BACKEND].model_inputs


def float_payload(
    samples: np.ndarray, rate: int = 24000, fmt: str = "pcm_f32le"
) -> dict[str, object]:
    audio = base64.b64encode(samples.astype("<f4").tobytes()).decode()
    return {"type": "audio", "format": fmt, "sample_rate_hz": rate, "audio": audio}
