"""Client events for the input-rate tests (tests/test_input_rate_*.py): an append of so
many bytes, a G.711 ``session.update`` and the session told for it.
"""

from __future__ import annotations

import pybase64

PCMU_TOLD = {"audio": {"input": {"format": {"type": "audio/pcmu"}}}}
PCMU = {"type": "session.update", "session": PCMU_TOLD}


def append(n_bytes: int, **extra: object) -> dict[str, object]:
    audio = pybase64.b64encode(b"\xff" * n_bytes).decode()
    return {"type": "input_audio_buffer.append", "audio": audio, **extra}


def told(session: object) -> dict[str, object]:
    return {"type": "session.updated", "session": session}
