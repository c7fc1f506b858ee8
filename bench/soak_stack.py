"""The soak's processes on loopback, and the faults it injects into them.

One ``redis-server`` (append-only, so a restart keeps the sessions), the reference
backends (``turn`` and ``duplex-no-barge-in``), each on a fixed port so it can be
killed and started again there, and two proxy replicas sharing the Redis store
(``bench/soak.py``). In the background, ``fault_loop`` kills and restarts an upstream
or restarts Redis.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from processes import (
    BACKEND_MAX_SESSIONS,
    QUIET,
    ROOT,
    free_port,
    proxy_replica,
    redis_argv,
    route,
    stop_all,
    wait_port,
)
from soak_counts import Faults

KINDS = ("turn", "duplex-no-barge-in")


def _pings(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


@dataclass
class Restartable:
    """A process on a fixed port that can be killed and started again there."""

    name: str
    argv: list[str]
    port: int
    env: dict[str, str]
    ready: str  # "port" or "redis"
    proc: subprocess.Popen[bytes] | None = None
    restarts: int = 0

    def start(self) -> None:
        self.proc = subprocess.Popen(self.argv, cwd=ROOT, env=self.env, **QUIET)
        if self.ready == "redis":
            deadline = time.monotonic() + 10
            while not _pings(self.port):
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError(f"{self.name} did not start")
                time.sleep(0.02)
        else:
            wait_port(self.port, self.proc, 30, self.name)

    def stop(self, sig: signal.Signals) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def restart(self, sig: signal.Signals, down_s: float) -> None:
        self.stop(sig)
        time.sleep(down_s)
        self.start()
        self.restarts += 1


@dataclass
class Stack:
    redis: Restartable
    backends: dict[str, Restartable]
    replicas: list[subprocess.Popen[bytes]]
    bases: list[str]


@contextlib.contextmanager
def stack(reply_ms: int, workdir: Path, logs: Path | None = None) -> Iterator[Stack]:
    env = {**os.environ, "DUPLEX_PROXY__SERVER__LOG_LEVEL": "warning"}
    owned: list[Restartable] = []
    replicas: list[subprocess.Popen[bytes]] = []
    try:
        rport = free_port()
        argv = redis_argv(rport, "--appendonly", "yes", "--appendfsync", "everysec")
        argv += ["--dir", str(workdir)]
        redis = Restartable("redis-server", argv, rport, env, "redis")
        owned.append(redis)
        redis.start()
        backends: dict[str, Restartable] = {}
        for kind in KINDS:
            port = free_port()
            argv = [sys.executable, "-m", "proxy", "reference-backend", "--mode", kind]
            argv += ["--port", str(port), "--reply-ms", str(reply_ms), "--log-level", "warning"]
            argv += ["--max-sessions", str(BACKEND_MAX_SESSIONS)]
            backends[kind] = Restartable(f"reference {kind}", argv, port, env, "port")
            owned.append(backends[kind])
            backends[kind].start()
        config = workdir / "proxy.toml"
        routes = [route(k, f"ws://127.0.0.1:{b.port}/v1/realtime") for k, b in backends.items()]
        config.write_text(
            f'[server]\nlog_level = "warning"\n[auth]\nmode = "none"\n'
            f'[store]\nurl = "redis://127.0.0.1:{rport}/0"\n\n' + "\n".join(routes)
        )
        bases = []
        replica_env = {k: v for k, v in env.items() if k != "DUPLEX_PROXY__SERVER__LOG_LEVEL"}
        if logs is not None:
            logs.mkdir(parents=True, exist_ok=True)
            replica_env["DUPLEX_PROXY__SERVER__LOG_LEVEL"] = "info"
        for i in range(2):
            out = subprocess.DEVNULL if logs is None else (logs / f"replica{i}.log").open("wb")
            proc, url = proxy_replica(config, replica_env, out)
            replicas.append(proc)
            bases.append(url)
        yield Stack(redis, backends, replicas, bases)
    finally:
        stop_all(replicas)
        for proc in reversed(owned):
            proc.stop(signal.SIGTERM)


async def fault_loop(
    stk: Stack, faults: Faults, rng: random.Random, every_s: float, t0: float
) -> None:
    """Kill and restart an upstream, or restart Redis, every ``every_s`` on average."""
    while True:
        await asyncio.sleep(rng.uniform(0.5, 1.5) * every_s)
        at = round(time.monotonic() - t0, 1)
        if rng.random() < 0.5:
            kind = rng.choice(KINDS)
            await asyncio.to_thread(stk.backends[kind].restart, signal.SIGKILL, 0.5)
            faults.upstream_kills += 1
            faults.timeline.append([at, f"upstream {kind} killed and restarted"])
        else:
            await asyncio.to_thread(stk.redis.restart, signal.SIGTERM, 1.0)
            faults.redis_restarts += 1
            faults.timeline.append([at, "redis restarted"])
