"""The shim's framing for PersonaPlex (``shim/upstream_input.py``): the converted audio is
cut into whole 80 ms units and the rest sent ahead of a commit; with no unit, appends
pass through.
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import pytest

from proxy.reference.personaplex_frames import UNIT_SAMPLES
from shim.audio import PCM_F32, AudioFormat
from shim.upstream_input import AppendConverter, unit_samples

pytestmark = pytest.mark.timeout(120)


F32_24K = AudioFormat(PCM_F32, 24000)
PCM16_24K = AudioFormat("pcm16", 24000)


def _append(pcm: bytes) -> dict[str, Any]:
    return {"type": "input_audio_buffer.append", "audio": base64.b64encode(pcm).decode()}


def test_converter_sends_whole_units_and_the_rest_ahead_of_a_commit() -> None:
    unit = unit_samples(F32_24K, {"chunk_period_ms": 80})
    assert unit == UNIT_SAMPLES
    conv = AppendConverter(F32_24K, unit)
    pcm = (np.arange(24000 * 3 // 10 * 7, dtype=np.int64) % 2000 - 1000).astype("<i2")
    sent: list[bytes] = []
    for i in range(0, pcm.size, 2400):  # 100 ms appends of 24 kHz PCM16
        event = {**_append(pcm[i : i + 2400].tobytes()), "event_id": f"evt_{i}"}
        for ev in conv.appends(event, PCM16_24K):
            # A unit may hold audio of several appends: no client event id goes with it.
            assert ev["type"] == "input_audio_buffer.append" and "event_id" not in ev
            sent.append(base64.b64decode(ev["audio"]))
    assert {len(b) for b in sent} == {UNIT_SAMPLES * 4}
    assert conv.pending_bytes == (pcm.size % UNIT_SAMPLES) * 4
    rest = conv.flush()
    assert rest is not None and conv.pending_bytes == 0 and conv.flush() is None
    sent.append(base64.b64decode(rest["audio"]))
    got = np.frombuffer(b"".join(sent), dtype="<f4")
    np.testing.assert_allclose(got, pcm.astype(np.float32) / 32768.0, atol=1e-6)


def test_converter_without_a_unit_passes_appends_through() -> None:
    assert unit_samples(F32_24K, {}) is None
    conv = AppendConverter(F32_24K)
    (ev,) = conv.appends(_append(b"\1\0" * 2400), PCM16_24K)
    assert len(base64.b64decode(ev["audio"])) == 2400 * 4
    assert conv.flush() is None
