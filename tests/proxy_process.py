"""A proxy replica as a real process (``python -m proxy serve``) with its own config
file, for tests of signals: drain on SIGTERM, reload on SIGHUP."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from tests.ports import free_port
from tests.servers import ROOT

__all__ = [
    "CliBackend",
    "ProxyProcess",
    "backend_process",
    "cli_backend",
    "free_port",
    "proxy_process",
]

# A replica loads Silero and warms its VAD before /readyz answers: a few seconds on a quiet
# machine, but a serial run on two loaded cores once took over 30 s for the second replica.
START_TIMEOUT_S = 90.0


class ProxyProcess:
    def __init__(self, proc: asyncio.subprocess.Process, port: int, config: Path, log: Path):
        self.proc = proc
        self.base = f"http://127.0.0.1:{port}"
        self.config = config
        self.log = log

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-6000:]

    async def readyz(self) -> tuple[int, dict[str, Any]]:
        async with aiohttp.ClientSession() as http, http.get(self.base + "/readyz") as resp:
            body: dict[str, Any] = await resp.json()
            return resp.status, body

    async def until_readyz(self, status: int, within_s: float = 15.0) -> dict[str, Any]:
        """Poll /readyz until it answers ``status``; its body."""
        async with asyncio.timeout(within_s):
            while True:
                with suppress(aiohttp.ClientError):
                    code, body = await self.readyz()
                    if code == status:
                        return body
                await asyncio.sleep(0.05)

    async def until_ready(self, within_s: float = START_TIMEOUT_S) -> None:
        """Poll /readyz until it says "ready": serving, and its store and routes are up."""
        async with asyncio.timeout(within_s):
            while True:
                if self.proc.returncode is not None:
                    raise RuntimeError(f"replica exited:\n{self.output()}")
                with suppress(aiohttp.ClientError):
                    _, body = await self.readyz()
                    if body.get("status") == "ready":
                        return
                await asyncio.sleep(0.1)

    async def until_logged(self, needle: str, within_s: float = 15.0) -> str:
        async with asyncio.timeout(within_s):
            while True:
                text = self.log.read_text(errors="replace")
                if needle in text:
                    return text
                await asyncio.sleep(0.05)

    async def wait_exit(self, within_s: float) -> int:
        async with asyncio.timeout(within_s):
            return await self.proc.wait()


@asynccontextmanager
async def proxy_process(
    tmp_path: Path, name: str, config: str | Path
) -> AsyncIterator[ProxyProcess]:
    """A replica serving ``config`` (its text, or a file), once /readyz answers at all."""
    if isinstance(config, str):
        text, config = config, tmp_path / f"{name}.toml"
        config.write_text(text)
    port = free_port()
    log = tmp_path / f"{name}.log"
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            *("-m", "proxy", "serve", "--config", str(config)),
            *("--host", "127.0.0.1", "--port", str(port)),
            cwd=ROOT,
            env={
                **{k: v for k, v in os.environ.items() if not k.startswith("DUPLEX_PROXY__")},
                "PYTHONUNBUFFERED": "1",
            },
            stdout=out,
            stderr=out,
        )
        replica = ProxyProcess(proc, port, config, log)
        try:
            async with aiohttp.ClientSession() as http, asyncio.timeout(START_TIMEOUT_S):
                while True:
                    if proc.returncode is not None:
                        raise RuntimeError(f"{name} exited:\n{replica.output()}")
                    with suppress(aiohttp.ClientError):
                        async with http.get(replica.base + "/readyz"):
                            break
                    await asyncio.sleep(0.1)
            yield replica
        finally:
            if proc.returncode is None:
                proc.send_signal(signal.SIGINT)  # no readiness delay at teardown
                try:
                    async with asyncio.timeout(15):
                        await proc.wait()
                except TimeoutError:
                    proc.kill()
                    await proc.wait()


@asynccontextmanager
async def backend_process(
    tmp_path: Path, name: str, mode: str
) -> AsyncIterator[tuple[asyncio.subprocess.Process, int]]:
    """``python -m proxy reference-backend``; yields the process and its port once it listens."""
    port = free_port()
    with (tmp_path / f"{name}.log").open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            *("-m", "proxy", "reference-backend", "--mode", mode),
            *("--host", "127.0.0.1", "--port", str(port), "--reply-ms", "1500"),
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdout=out,
            stderr=out,
        )
        try:
            async with asyncio.timeout(START_TIMEOUT_S):
                while True:
                    try:
                        _, writer = await asyncio.open_connection("127.0.0.1", port)
                    except OSError:
                        if proc.returncode is not None:
                            raise RuntimeError(f"{name} exited") from None
                        await asyncio.sleep(0.1)
                        continue
                    writer.close()
                    await writer.wait_closed()
                    break
            yield proc, port
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()


@dataclass
class CliBackend:
    """A reference backend process: its port, and its exit code once it ended."""

    port: int
    returncode: int | None = None


@asynccontextmanager
async def cli_backend(mode: str, *options: str) -> AsyncIterator[CliBackend]:
    """``python -m proxy reference-backend --mode MODE OPTIONS`` on a free port, once its
    /healthz answers (at most 20 s); terminated at the end, its exit code kept."""
    backend = CliBackend(free_port())
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "proxy", "reference-backend", "--mode", mode),
        *("--port", str(backend.port), *options),
    )
    try:
        async with aiohttp.ClientSession() as http:
            for _ in range(400):
                with suppress(aiohttp.ClientConnectionError):
                    async with http.get(f"http://127.0.0.1:{backend.port}/healthz"):
                        break
                await asyncio.sleep(0.05)
        yield backend
    finally:
        proc.terminate()
        backend.returncode = await proc.wait()
