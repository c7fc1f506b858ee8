"""What a config reload does to the process-wide VAD runner (``proxy/config_reload.py``):
``[vad] gather_ms`` applies to its next batch; the keys it was built with need a restart."""

from __future__ import annotations

from pathlib import Path

from proxy.config import load_config
from proxy.config_reload import ConfigReloader, restart_needed
from proxy.state import ProxyState

ROUTE = (
    '[auth]\nmode = "none"\n[[routes]]\nmodel = "a"\nupstream = "ws://127.0.0.1:9/v1/realtime"\n'
)


def _vad(gather_ms: float, inline_rows: int) -> str:
    return ROUTE + f"[vad]\ngather_ms = {gather_ms}\ninline_rows = {inline_rows}\n"


async def _nothing(*_: object) -> None:
    return None


async def test_a_reload_applies_gather_ms_to_the_running_vad(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(_vad(6.0, 8))
    state = ProxyState(config=load_config(path))
    runner = state.vad_runner()
    assert runner.gather_s == 0.006
    try:
        path.write_text(_vad(0.0, 2))
        reloader = ConfigReloader(path, state, _nothing, _nothing)
        assert await reloader.reload("test")
        assert state.config.vad.gather_ms == 0.0
        assert runner.gather_s == 0.0  # the next batch is armed without waiting
        old = load_config(path)
        path.write_text(_vad(12.5, 8))
        assert await reloader.reload("test")
        assert runner.gather_s == 0.0125
        assert restart_needed(old, state.config) == ["vad.inline_rows"]
        assert state.vad_runner() is runner
    finally:
        await runner.close()
