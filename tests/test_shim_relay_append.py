"""A native client's appends in the barge-in relay are heard as vLLM-Omni reads them
(its ``protocol/realtime/audio.py``, ``convert_input_audio_with_rate``): what the
upstream hears, the proxy's VAD, history and echo suppressor hear too."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from shim.actions import SendClient, SendUpstream
from shim.audio import AudioFormat
from shim.native_client import as_upstream_reads
from tests.duplex_relay_script import make

PCM = (np.sin(np.arange(4800) / 10) * 8000).astype("<i2").tobytes()  # 200 ms at 24 kHz
CLEAN = base64.b64encode(PCM).decode()


@pytest.mark.parametrize(
    ("audio", "rate", "heard"),
    [
        (base64.encodebytes(PCM).decode(), 24000, 3200),  # MIME line breaks
        (CLEAN + "\n", 24000, 3200),  # a trailing newline
        (CLEAN, 0, 4800),  # no rate: the session's (vLLM-Omni's 16 kHz)
        # No number: its runner takes it as 16 kHz, so 4800 samples last 300 ms.
        (CLEAN, "24000", 4800),
    ],
)
def test_what_the_upstream_hears_the_proxy_hears(audio: str, rate: object, heard: int) -> None:
    sc = make()
    before = sc.s.history.end
    ev = {"type": "input_audio_buffer.append", "audio": audio, "format": "pcm16"}
    out = sc.client(ev | {"sample_rate_hz": rate})
    assert not [a for a in out if isinstance(a, SendClient)]
    (sent,) = [a.event for a in out if isinstance(a, SendUpstream)]
    assert sent["audio"] == audio and sent["sample_rate_hz"] == rate, "sent as it came"
    # On the 16 kHz timeline, less the resampler's few samples of delay.
    assert heard - 40 <= sc.s.history.end - before <= heard


def test_what_the_upstream_refuses_goes_there_unread() -> None:
    sc = make()
    before = sc.s.history.end
    out = sc.client({"type": "input_audio_buffer.append", "audio": CLEAN + "A", "format": "pcm16"})
    assert [type(a) for a in out] == [SendUpstream]
    assert sc.s.history.end == before


def test_float_audio_is_read_strictly_as_vllm_omni_reads_it() -> None:
    f32 = AudioFormat("pcm_f32le", 24000)
    ev = {"type": "input_audio_buffer.append", "audio": CLEAN + "\n"}
    assert as_upstream_reads(ev, f32) == ev
