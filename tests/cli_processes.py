"""``python -m proxy ...`` subprocesses on loopback, for the tests that run the command
line for real (tests/test_cli*.py and others).

``Procs`` starts them with the test runner's environment less its proxy overrides,
output to files under ``tmp_path`` so a failure shows it, and always kills and reaps
them at teardown (the ``procs`` fixture; a test module imports it and names it in
``__all__``); the waits give a process ``STARTUP_S`` to answer HTTP or accept TCP.
"""

from __future__ import annotations

import asyncio
import os
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
from tests.servers import ROOT, Client

PY = sys.executable
STARTUP_S = 60.0  # the proxy loads the Silero ONNX model before it listens


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
