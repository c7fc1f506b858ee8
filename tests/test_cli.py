"""The command line, run for real: ``python -m proxy ...`` subprocesses on loopback.

Each test starts real processes (the proxy and, where needed, reference backends),
waits until they accept connections, talks to them over WebSocket, and always kills
them on teardown. Output goes to files under ``tmp_path`` so a failure shows it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import aiohttp
import pytest

from tests.ports import free_port
from tests.servers import ROOT, Client, connect, load_clip, silence, ws_url

PY = sys.executable
STARTUP_S = 60.0  # the proxy loads the Silero ONNX model before it listens
DRAIN_TIMEOUT_S = 5


def clean_env(**extra: str) -> dict[str, str]:
    """The test runner's environment without inherited proxy overrides, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUPLEX_PROXY__")}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


@dataclass
class Proc:
    popen: subprocess.Popen[bytes]
    name: str
    out: Path
    err: Path
    files: list[IO[bytes]] = field(default_factory=list)

    def output(self) -> str:
        text = []
        for label, path in (("stdout", self.out), ("stderr", self.err)):
            body = path.read_text(errors="replace") if path.exists() else ""
            text.append(f"--- {self.name} {label} ---\n{body[-4000:]}")
        return "\n".join(text)

    def check_alive(self) -> None:
        code = self.popen.poll()
        if code is not None:
            pytest.fail(f"{self.name} exited early with code {code}\n{self.output()}")

    async def wait_exit(self, within_s: float) -> int:
        try:
            return await asyncio.to_thread(self.popen.wait, within_s)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{self.name} still running after {within_s}s\n{self.output()}")


class Procs:
    """Starts subprocesses and guarantees they are dead (and reaped) at teardown."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: list[Proc] = []

    def spawn(self, name: str, args: list[str], env: dict[str, str] | None = None) -> Proc:
        out, err = self.tmp / f"{name}.out", self.tmp / f"{name}.err"
        fout, ferr = out.open("wb"), err.open("wb")
        popen = subprocess.Popen(
            [PY, "-m", "proxy", *args],
            cwd=ROOT,
            env=env or clean_env(),
            stdin=subprocess.DEVNULL,
            stdout=fout,
            stderr=ferr,
        )
        proc = Proc(popen, name, out, err, [fout, ferr])
        self.procs.append(proc)
        return proc

    def close(self) -> None:
        for proc in self.procs:
            if proc.popen.poll() is None:
                proc.popen.kill()
        for proc in self.procs:
            try:
                proc.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - kill cannot be ignored
                pass
            for f in proc.files:
                f.close()


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[Procs]:
    p = Procs(tmp_path)
    try:
        yield p
    finally:
        p.close()


async def wait_http_ok(proc: Proc, base: str, path: str = "/healthz") -> None:
    deadline = time.monotonic() + STARTUP_S
    async with aiohttp.ClientSession() as http:
        while True:
            proc.check_alive()
            try:
                async with http.get(base + path, timeout=aiohttp.ClientTimeout(total=2)) as r:
                    if r.status == 200:
                        return
            except (aiohttp.ClientError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"{proc.name} not answering {path} after {STARTUP_S}s\n{proc.output()}")
            await asyncio.sleep(0.1)


async def wait_tcp(proc: Proc, port: int) -> None:
    deadline = time.monotonic() + STARTUP_S
    while True:
        proc.check_alive()
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            if time.monotonic() > deadline:
                pytest.fail(f"{proc.name} not listening on {port}\n{proc.output()}")
            await asyncio.sleep(0.1)
            continue
        writer.close()
        await writer.wait_closed()
        return


async def start_default_proxy(procs: Procs, **env: str) -> tuple[Proc, str]:
    """``python -m proxy`` in the repo root: reads ./config.toml (route ``demo``)."""
    port = free_port()
    proc = procs.spawn(
        "proxy",
        [],
        env=clean_env(
            DUPLEX_PROXY__SERVER__PORT=str(port), DUPLEX_PROXY__SERVER__HOST="127.0.0.1", **env
        ),
    )
    base = f"http://127.0.0.1:{port}"
    await wait_http_ok(proc, base)
    return proc, base


async def session_mode(c: Client) -> str:
    """Open a session and return ``capabilities.proxy.mode`` from its session.created.

    session.update goes first, so both a waiting and a speak-first handshake complete.
    """
    await c.send({"type": "session.update", "session": {"type": "realtime"}})
    created = await c.until("session.created", timeout=15)
    mode: str = created["session"]["capabilities"]["proxy"]["mode"]
    return mode


# --------------------------------------------------------------------------- tests


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


BAD_CONFIGS = [
    pytest.param("[server\nport = 1\n", None, ("invalid configuration", "line"), id="bad-toml"),
    pytest.param(
        "[server]\nbogus_key = 1\n", None, ("invalid configuration", "bogus_key"), id="unknown-key"
    ),
    pytest.param(
        '[server]\nport = "eighty"\n', None, ("invalid configuration", "server.port"), id="bad-type"
    ),
    pytest.param(
        '[[routes]]\nmodel = "x"\nupstream = "http://example.com/"\n',
        None,
        ("invalid configuration", "routes.0", "upstream"),
        id="bad-route-upstream",
    ),
    pytest.param(
        "[server]\nport = 9\n",
        {"DUPLEX_PROXY__SERVER__MAX_SESSIONS": "lots"},
        ("invalid configuration", "server.max_sessions"),
        id="bad-env-value",
    ),
]


@pytest.mark.parametrize(("text", "env", "needles"), BAD_CONFIGS)
def test_invalid_config_exits_2_naming_the_problem(
    tmp_path: Path, text: str, env: dict[str, str] | None, needles: tuple[str, ...]
) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(text)
    done = subprocess.run(
        [PY, "-m", "proxy", "serve", "--config", str(config), "--port", str(free_port())],
        cwd=ROOT,
        env=clean_env(**(env or {})),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    for needle in needles:
        assert needle in done.stderr, f"{needle!r} not in stderr: {done.stderr!r}"
    assert "Traceback" not in done.stderr


def test_missing_config_file_exits_2(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    done = subprocess.run(
        [PY, "-m", "proxy", "serve", "--config", str(missing)],
        cwd=ROOT,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "not found" in done.stderr and str(missing) in done.stderr


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
