"""The command line, run for real: ``python -m proxy ...`` subprocesses on loopback.

Each test starts real processes (the proxy and, where needed, reference backends),
waits until they accept connections, talks to them over WebSocket, and always kills
them on teardown (tests/cli_processes.py): ``serve`` with a config routing to three
reference backends, the default command's demo route, an environment override, and
SIGTERM draining sessions. A bad config: tests/test_cli_config_errors.py.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import aiohttp

from tests.cli_processes import (
    Procs,
    procs,
    session_mode,
    start_default_proxy,
    wait_http_ok,
    wait_tcp,
)
from tests.ports import free_port
from tests.servers import connect, load_clip, silence, ws_url

__all__ = ["procs"]

DRAIN_TIMEOUT_S = 5


async def test_serve_with_config_routes_to_three_reference_backend_processes(
    procs: Procs, tmp_path: Path
) -> None:
    kinds = {"m-duplex": "duplex", "m-nobargein": "duplex-no-barge-in", "m-turn": "turn"}
    ports = {model: free_port() for model in kinds}
    backends = {
        model: procs.spawn(
            f"backend-{kind}",
            [
                "reference-backend",
                "--mode",
                kind,
                "--host",
                "127.0.0.1",
                "--port",
                str(ports[model]),
            ],
        )
        for model, kind in kinds.items()
    }
    config = tmp_path / "proxy.toml"
    config.write_text(
        '[server]\nhost = "127.0.0.1"\n\n[auth]\nmode = "none"\n\n'
        + "".join(
            f'[[routes]]\nmodel = "{model}"\nupstream = "ws://127.0.0.1:{ports[model]}/v1/realtime"\n\n'
            for model in kinds
        )
    )
    proxy_port = free_port()
    proxy = procs.spawn("proxy", ["serve", "--config", str(config), "--port", str(proxy_port)])
    for model, backend in backends.items():
        await wait_tcp(backend, ports[model])
    base = f"http://127.0.0.1:{proxy_port}"
    await wait_http_ok(proxy, base)

    expected = {  # a native client (?duplex=1); a GA client is relayed by no route
        "m-duplex": "passthrough",
        "m-nobargein": "barge_in_emulated",
        "m-turn": "duplex_emulated",
    }
    for model, mode in expected.items():
        async with connect(ws_url(base, model=model, duplex="1")) as c:
            assert await session_mode(c) == mode, model
    for proc in (proxy, *backends.values()):
        proc.check_alive()


async def test_default_command_serves_the_demo_route_end_to_end(procs: Procs) -> None:
    _, base = await start_default_proxy(procs)
    async with connect(ws_url(base, model="demo")) as c:
        assert await session_mode(c) == "duplex_emulated"
        await c.stream(load_clip("utt05_clean.wav") + silence(1000), realtime=False)
        done = await c.until("response.done", timeout=30)
        assert done["response"]["status"] == "completed", done["response"]
        deltas = c.of("response.output_audio.delta")
        assert deltas and all(isinstance(d["delta"], str) and d["delta"] for d in deltas)


async def test_sigterm_drains_sessions_with_1012_and_exits_0(procs: Procs) -> None:
    proc, base = await start_default_proxy(
        procs,
        DUPLEX_PROXY__SERVER__DRAIN_TIMEOUT_S=str(DRAIN_TIMEOUT_S),
        # A second, passthrough route: both kinds of session must be drained.
        DUPLEX_PROXY__ROUTES__1__MODEL="dx",
        DUPLEX_PROXY__ROUTES__1__UPSTREAM="embedded://duplex",
    )
    async with (
        connect(ws_url(base, model="demo")) as em,
        connect(ws_url(base, model="dx", duplex="1")) as pt,
    ):
        assert await session_mode(em) == "duplex_emulated"
        assert await session_mode(pt) == "passthrough"
        # SIGTERM in the middle of a reply, while assistant audio is streaming.
        await em.stream(load_clip("utt05_clean.wav") + silence(1000), realtime=False)
        await em.until("response.output_audio.delta", timeout=30)

        proc.popen.send_signal(signal.SIGTERM)

        for name, c in (("emulated", em), ("passthrough", pt)):
            async with asyncio.timeout(DRAIN_TIMEOUT_S + 20):
                while True:
                    msg = await c.ws.receive()
                    if msg.type in (
                        aiohttp.WSMsgType.CLOSE,
                        aiohttp.WSMsgType.CLOSING,
                        aiohttp.WSMsgType.CLOSED,
                    ):
                        break
            assert c.ws.close_code == 1012, (
                f"{name} session closed with {c.ws.close_code}\n{proc.output()}"
            )
    code = await proc.wait_exit(DRAIN_TIMEOUT_S + 20)
    assert code == 0, proc.output()


async def test_env_override_renames_the_route(procs: Procs) -> None:
    _, base = await start_default_proxy(procs, DUPLEX_PROXY__ROUTES__0__MODEL="renamed")
    async with connect(ws_url(base, model="renamed")) as c:
        assert await session_mode(c) == "duplex_emulated"
    async with connect(ws_url(base, model="demo")) as c:
        await c.send({"type": "session.update", "session": {"type": "realtime"}})
        err = await c.until("error", timeout=10)
        assert err["error"]["code"] == "model_not_found", err
        msg = await c.ws.receive(timeout=10)
        assert msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
        assert c.ws.close_code == 1008
