"""Resume across proxy *processes* sharing one real Redis (``docs/protocol.md``, "Resume").

Each replica is ``python -m proxy serve --config F --port P``, so one can be killed
with SIGKILL mid-response: nothing it had in memory survives, only what it wrote to
Redis. The reference backend runs in this process.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import IO, Any

import aiohttp
import pytest

from tests.redis_server import RedisServer
from tests.servers import ROOT, Client, connect, reference, ws_url
from tests.test_resume import (
    Tracked,
    answered,
    cut_answer_ends,
    mid_answer,
    resumed,
    wait_persisted,
)

pytestmark = [pytest.mark.redis, pytest.mark.slow]

START_TIMEOUT_S = 30.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _log_file(path: Path) -> IO[bytes]:
    return path.open("wb")


class Replica:
    def __init__(self, proc: asyncio.subprocess.Process, port: int, log: Path) -> None:
        self.proc = proc
        self.base = f"http://127.0.0.1:{port}"
        self.log = log


@asynccontextmanager
async def replica_process(
    tmp_path: Path, name: str, upstream: str, redis_url: str
) -> AsyncIterator[Replica]:
    config = tmp_path / f"{name}.toml"
    config.write_text(
        f'[server]\nlog_level = "info"\n[auth]\nmode = "none"\n[store]\nurl = "{redis_url}"\n'
        # Hand over at once on SIGTERM: these tests are about the handover, and a
        # reply must still be running when it happens (tests/test_drain.py: the delay).
        "[drain]\nreadiness_delay_s = 0\n"
        f'[[routes]]\nmodel = "m"\nupstream = "{upstream}"\n'
    )
    port = _free_port()
    log = tmp_path / f"{name}.log"
    out = _log_file(log)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "proxy",
        "serve",
        "--config",
        str(config),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=out,
        stderr=out,
    )
    replica = Replica(proc, port, log)
    try:
        await _until_ready(replica)
        yield replica
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                async with asyncio.timeout(15):
                    await proc.wait()
            except TimeoutError:
                proc.kill()
                await proc.wait()
        out.close()


@asynccontextmanager
async def replica_processes(
    tmp_path: Path, redis_url: str, reply_ms: int
) -> AsyncIterator[tuple[Replica, Replica]]:
    """A turn-based reference backend (in this process) behind replica processes "a" and
    "b" sharing the Redis at ``redis_url``."""
    async with (
        reference("turn", reply_ms=reply_ms) as up,
        replica_process(tmp_path, "a", up, redis_url) as a,
        replica_process(tmp_path, "b", up, redis_url) as b,
    ):
        yield a, b


async def lose_owner(
    c: Client, s: Tracked, owner: Replica, sig: signal.Signals, redis_url: str
) -> dict[str, Any]:
    """Once Redis holds the answer ``c`` is hearing, ``sig`` to its owner; ``c`` is read to
    its end. The answer's ``response.created``."""
    response = c.of("response.created")[-1]
    await wait_persisted(redis_url, s.sid, seq=response["server_event_seq"])
    owner.proc.send_signal(sig)
    with pytest.raises(ConnectionError):
        while True:  # whatever was already on the wire still arrives
            await c.recv()
    s.take(c)
    return response


async def _until_ready(replica: Replica) -> None:
    async with aiohttp.ClientSession() as http, asyncio.timeout(START_TIMEOUT_S):
        while True:
            if replica.proc.returncode is not None:
                raise RuntimeError(f"replica exited:\n{replica.log.read_text()[-3000:]}")
            with suppress(aiohttp.ClientError):
                async with http.get(replica.base + "/readyz") as resp:
                    body: dict[str, Any] = await resp.json()
                    if body.get("status") == "ready":
                        return
            await asyncio.sleep(0.1)


@pytest.fixture
def redis_url(redis_server_session: RedisServer) -> str:
    return redis_server_session.url


async def test_resume_on_a_second_process_replaces_the_first(
    tmp_path: Path, redis_url: str
) -> None:
    async with (
        replica_processes(tmp_path, redis_url, 3000) as (a, b),
    ):
        async with connect(ws_url(a.base)) as c1:
            s = await mid_answer(c1)
            s.take(c1)
            rid = c1.of("response.created")[-1]["response"]["id"]
            # The old connection stays open while the client resumes elsewhere.
            async with connect(ws_url(b.base)) as c2:
                await resumed(c2, s)
                replaced = await c1.until("session.replaced")
                assert replaced["session_id"] == s.sid
                with pytest.raises(ConnectionError):
                    while True:
                        await c1.recv()
                await cut_answer_ends(c2, rid)
                await answered(c2)
                s.take(c2)
        s.assert_exactly_once()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["sigkill", "sigterm"])
async def test_resume_after_the_owner_died_or_drained(
    tmp_path: Path, redis_url: str, sig: signal.Signals
) -> None:
    """SIGKILL: only what the owner had written survives. SIGTERM: it drains (close 1012)."""
    async with (
        replica_processes(tmp_path, redis_url, 3000) as (a, b),
    ):
        async with connect(ws_url(a.base)) as c1:
            s = await mid_answer(c1)
            response = await lose_owner(c1, s, a, sig, redis_url)
        async with connect(ws_url(b.base)) as c2:
            await resumed(c2, s)
            done = await cut_answer_ends(c2, response["response"]["id"])
            assert done["response"]["status_details"]["reason"]
            await answered(c2)
            s.take(c2)
        s.assert_exactly_once()
        if sig == signal.SIGKILL:
            assert a.proc.returncode == -signal.SIGKILL
        else:
            assert c1.ws.close_code == 1012, "drained: resume elsewhere"
