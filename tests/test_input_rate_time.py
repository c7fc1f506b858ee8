"""The input rate limit counts audio time, not bytes (docs/protocol.md, "Errors"):
a G.711 client (8 kHz, one byte a sample) gets the allowance of real time that a
24 kHz PCM16 client gets, not six times it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pybase64
import pytest

from proxy.client_limits import AUDIO_BYTES_PER_S, InputClock
from tests.servers import connect, reference, ws_url
from tests.test_cli import Procs, free_port, wait_http_ok

PCMU = {
    "type": "session.update",
    "session": {"audio": {"input": {"format": {"type": "audio/pcmu"}}}},
}


def append(n_bytes: int, **extra: object) -> dict[str, object]:
    audio = pybase64.b64encode(b"\xff" * n_bytes).decode()
    return {"type": "input_audio_buffer.append", "audio": audio, **extra}


def test_a_second_of_audio_costs_a_second_in_every_format() -> None:
    clock = InputClock()
    assert clock.cost(append(48000)) == AUDIO_BYTES_PER_S  # 24 kHz PCM16 by default
    assert clock.cost(PCMU) == 0
    assert clock.cost(append(8000)) == AUDIO_BYTES_PER_S  # a second of G.711
    # A refused update changes nothing.
    clock.cost({"type": "session.update", "session": {"audio": {"input": {"format": 7}}}})
    assert clock.cost(append(8000)) == AUDIO_BYTES_PER_S
    # An append naming its own format and rate (vLLM-Omni's clients) is read so.
    assert clock.cost(append(32000, format="pcm16", sample_rate_hz=16000)) == AUDIO_BYTES_PER_S
    flat = {"type": "session.update", "input_audio_format": "pcm_f32le", "sample_rate_hz": 16000}
    clock.cost(flat)
    assert clock.cost(append(64000)) == AUDIO_BYTES_PER_S
    assert clock.cost({"type": "input_audio_buffer.commit"}) == 0


def test_an_update_the_clock_cannot_read_leaves_the_format_and_never_raises() -> None:
    clock = InputClock()
    clock.cost(PCMU)
    td = {"type": "semantic_vad", "eagerness": ["high"]}
    for session in ({"audio": {"input": {"turn_detection": td}}}, {"audio": [1]}, 5, None):
        assert clock.cost({"type": "session.update", "session": session}) == 0
        assert clock.cost(append(8000)) == AUDIO_BYTES_PER_S
    assert clock.cost(append(8000, format=["x"], sample_rate_hz={})) > 0


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Procs]:
    p = Procs(tmp_path)
    try:
        yield p
    finally:
        p.close()


async def test_a_g711_client_is_held_to_real_time_like_any_other(
    processes: Procs, tmp_path: Path
) -> None:
    async with reference("turn", reply_ms=600) as upstream:
        config = tmp_path / "proxy.toml"
        config.write_text(
            '[server]\nhost = "127.0.0.1"\ninput_realtime_factor = 1.0\ninput_burst_s = 1.0\n'
            'input_rate_grace_s = 60.0\n[auth]\nmode = "none"\n'
            f'\n[[routes]]\nmodel = "m"\nupstream = "{upstream}"\n'
        )
        port = free_port()
        proc = processes.spawn("proxy", ["serve", "--config", str(config), "--port", str(port)])
        base = f"http://127.0.0.1:{port}"
        await wait_http_ok(proc, base)
        async with connect(ws_url(base)) as c:
            await c.until("session.created")
            await c.send(PCMU)
            await c.until("session.updated")
            for _ in range(40):  # 4 s of G.711 at once: 4x the 1 s burst
                await c.send(append(800))
            err = await c.until("error", timeout=20)
            assert err["error"]["code"] == "input_rate_exceeded", err
        proc.check_alive()
