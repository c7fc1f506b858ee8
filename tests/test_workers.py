"""``serve --workers N``: N processes on one port sharing the store (``proxy/workers.py``).

Real processes: the proxy with two workers, a real redis-server, strict reference
backends. Which worker served what comes from the workers' own log lines (each has
its ``replica_id``).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from proxy.reference.options import ReferenceOptions
from tests.proxy_process import free_port
from tests.redis_server import RedisServer
from tests.resume_client import Tracked, created, resumed, speak
from tests.servers import ROOT, Client, connect, reference, ws_url

pytestmark = [pytest.mark.slow]

STRICT = ReferenceOptions(fidelity="strict")


class Workers:
    def __init__(self, proc: asyncio.subprocess.Process, port: int, log: Path) -> None:
        self.proc, self.log = proc, log
        self.base = f"http://127.0.0.1:{port}"

    def events(self, name: str) -> list[dict[str, Any]]:
        out = []
        # Two workers writing at the same moment may put two lines on one.
        text = self.log.read_text(errors="replace").replace("}{", "}\n{")
        for line in text.splitlines():
            with suppress(ValueError):
                ev = json.loads(line)
                if isinstance(ev, dict) and ev.get("event") == name:
                    out.append(ev)
        return out

    async def metric(self, name: str) -> float:
        """The sum of every series of ``name`` in one /metrics answer."""
        async with aiohttp.ClientSession() as http, http.get(self.base + "/metrics") as resp:
            text = await resp.text()
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith(name + "{") or line.startswith(name + " ")
        )


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUPLEX_PROXY__")}
    return {**env, "PYTHONUNBUFFERED": "1"}


@asynccontextmanager
async def workers(tmp_path: Path, config: str, n: int) -> AsyncIterator[Workers]:
    path, log, port = tmp_path / "proxy.toml", tmp_path / "proxy.log", free_port()
    path.write_text(config)
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "proxy", "serve", "--config", str(path)),
            *("--host", "127.0.0.1", "--port", str(port), "--workers", str(n)),
            cwd=ROOT,
            env=_env(),
            stdout=out,
            stderr=out,
        )
        w = Workers(proc, port, log)
        try:
            async with asyncio.timeout(60):
                # Every worker listening: each logs its own "listening".
                while len(w.events("listening")) < n:
                    assert proc.returncode is None, log.read_text()
                    await asyncio.sleep(0.1)
            yield w
        finally:
            if proc.returncode is None:
                proc.send_signal(signal.SIGINT)
                try:
                    async with asyncio.timeout(20):
                        await proc.wait()
                except TimeoutError:
                    proc.kill()


def _config(upstream: str, store: str) -> str:
    return (
        f'[auth]\nmode = "none"\n[store]\nurl = "{store}"\n[drain]\nreadiness_delay_s = 0\n'
        f'[[routes]]\nmodel = "m"\nupstream = "{upstream}"\n'
    )


def _replica_of(w: Workers, event: str, sid: str) -> str:
    found = [e["replica_id"] for e in w.events(event) if e.get("session_id") == sid]
    assert found, f"no {event} logged for {sid}"
    return str(found[-1])


@pytest.mark.redis
async def test_two_workers_share_the_port_the_store_and_the_metrics(
    tmp_path: Path, redis_server_session: RedisServer
) -> None:
    async with (
        reference("turn", reply_ms=800, options=STRICT) as up,
        workers(tmp_path, _config(up, redis_server_session.url), 2) as w,
        AsyncExitStack() as stack,
    ):
        clients: list[Client] = []
        tracked: list[Tracked] = []
        for _ in range(12):
            c = await stack.enter_async_context(connect(ws_url(w.base)))
            clients.append(c)
            tracked.append(await created(c))
        # The kernel spread the sessions over both workers.
        homes = {_replica_of(w, "session_open", s.sid) for s in tracked}
        assert len(homes) == 2, homes

        # Any worker's /metrics counts the sessions of both (asked several times: the
        # answers come from either worker).
        for _ in range(4):
            assert await w.metric("duplex_proxy_sessions_total") == 12
            assert await w.metric("duplex_proxy_sessions_active") == 12
            # Tasks too: every session runs tasks on its worker, summed over both.
            assert await w.metric("duplex_proxy_asyncio_tasks") >= 12

        # A session talks, its client goes, and it resumes on whichever worker the new
        # connection lands on, until it has landed on the other one.
        c, s = clients[0], tracked[0]
        await speak(c)
        assert (await c.until("response.done", timeout=30))["response"]["status"] == "completed"
        s.take(c)
        home = _replica_of(w, "session_open", s.sid)
        await c.ws.close()
        moved = False
        for _ in range(20):
            async with connect(ws_url(w.base, model=None)) as again:
                await resumed(again, s)
                if _replica_of(w, "session_resumed", s.sid) != home:
                    moved = True
                    await speak(again)
                    done = await again.until("response.done", timeout=30)
                    assert done["response"]["status"] == "completed", done
                    s.take(again)
                    break
                s.take(again)
        assert moved, "twenty resumes all landed on the session's first worker"
        s.assert_exactly_once()
        assert await w.metric("duplex_proxy_resumes_total") >= 1


@pytest.mark.redis
async def test_sigterm_drains_every_worker(
    tmp_path: Path, redis_server_session: RedisServer
) -> None:
    async with (
        reference("turn", reply_ms=800, options=STRICT) as up,
        workers(tmp_path, _config(up, redis_server_session.url), 2) as w,
        AsyncExitStack() as stack,
    ):
        clients = []
        sids = []
        while len({_replica_of(w, "session_open", sid) for sid in sids}) < 2:
            assert len(clients) < 30, "thirty sessions all on one worker"
            c = await stack.enter_async_context(connect(ws_url(w.base)))
            clients.append(c)
            sids.append((await created(c)).sid)
        w.proc.send_signal(signal.SIGTERM)

        async def closed(c: Client) -> int | None:
            with pytest.raises(ConnectionError):
                while True:
                    await c.recv()
            return c.ws.close_code

        # Every client told to resume elsewhere (1012), on either worker.
        assert await asyncio.gather(*(closed(c) for c in clients)) == [1012] * len(clients)
        async with asyncio.timeout(30):
            assert await w.proc.wait() == 0
        assert len(w.events("stopped")) == 2
        assert w.events("workers_stopped")[-1]["exit_codes"] == [0, 0]


def test_more_than_one_worker_with_the_in_memory_store_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "proxy.toml"
    path.write_text(_config("ws://127.0.0.1:9/v1/realtime", "memory://"))
    done = subprocess.run(
        [sys.executable, "-m", "proxy", "serve", "--config", str(path), "--workers", "2"],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--workers 2 needs a shared store" in done.stderr
