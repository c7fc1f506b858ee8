"""``serve --workers N``: N proxy processes on one port, so every core serves sessions.

One Python process runs its sessions on one core. With N workers each is a whole
proxy (``duplex-proxy serve``) listening on the same port with ``SO_REUSEPORT``, so
the kernel spreads new connections across them; this parent only starts them,
forwards signals and waits. The workers share nothing in memory: they share the
session store as replicas do (a resume that lands on another worker takes the
session over through the store, fenced like a move between replicas; see
``docs/architecture.md``). Hence the in-memory store allows one worker only.

``/metrics`` on any worker answers for all of them: the workers write their metrics
into one directory (``prometheus_client``'s multiprocess mode, ``proxy/metrics.py``),
made here and removed when the last worker has exited.

Signals: SIGTERM, SIGINT and SIGHUP go to every worker, which drains (or reloads)
exactly as a single process does (``proxy/server.py``). A worker that exits on its
own stops the others and the parent exits 1: the orchestrator restarts the whole.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from types import FrameType

from proxy.config import Config
from proxy.logging import get_logger

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def default_workers() -> int:
    """One worker per core this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def shared_store(config: Config) -> bool:
    return not config.store.url.startswith("memory:")


def worker_count(config: Config, asked: int | None) -> int | str:
    """How many workers to run, or why the asked number cannot be.

    Unasked, it is one per core with a shared store and 1 with the in-memory one
    (which one process alone can hold); asking for more than one with the in-memory
    store is refused rather than quietly giving sessions that cannot resume."""
    if asked is None:
        return default_workers() if shared_store(config) else 1
    if asked < 1:
        return "--workers must be at least 1"
    if asked > 1 and not shared_store(config):
        return (
            f"--workers {asked} needs a shared store: workers share sessions only through"
            " it, and the in-memory store (store.url memory://) lives in one process;"
            " set store.url to Redis, or run --workers 1"
        )
    return asked


def _die_with_parent() -> None:
    """In a worker before it runs: killed when the parent dies, so a parent killed
    outright (SIGKILL, OOM) takes its workers along as a single process would be."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _hold_port(host: str, port: int) -> tuple[socket.socket, int]:
    """Bind (not listen) with SO_REUSEPORT: keeps the port, and resolves port 0 to a
    real one every worker can then bind too. A socket that does not listen takes no
    connections, so the kernel spreads them over the workers only."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    return sock, int(sock.getsockname()[1])


def run_workers(
    n: int, host: str, port: int, config_path: str | None, argv0: Sequence[str] | None = None
) -> int:
    """Start ``n`` workers on ``host:port`` and supervise them until they exit."""
    log = get_logger(workers=n)
    try:
        holder, port = _hold_port(host, port)
    except OSError as exc:
        log.error("cannot_listen", error=str(exc))
        return 1
    metrics_dir = tempfile.mkdtemp(prefix="duplex-proxy-metrics-")
    env = {**os.environ, MULTIPROC_ENV: metrics_dir}
    cmd = list(argv0 or [sys.executable, "-m", "proxy"])
    cmd += ["serve", "--workers", "1", "--reuse-port", "--host", host, "--port", str(port)]
    if config_path is not None:
        cmd += ["--config", config_path]
    procs: list[subprocess.Popen[bytes]] = []
    stopping = False

    def forward(sig: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = stopping or sig != signal.SIGHUP
        for p in procs:
            if p.poll() is None:
                p.send_signal(sig)

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED}
    try:
        for _ in range(n):
            procs.append(subprocess.Popen(cmd, env=env, preexec_fn=_die_with_parent))
        log.info("workers_started", pids=[p.pid for p in procs], port=port)
        failed = False
        while any(p.poll() is None for p in procs):
            if not stopping and any(p.poll() is not None for p in procs):
                dead = [p.pid for p in procs if p.poll() is not None]
                log.error("worker_exited", pids=dead, note="stopping the other workers")
                failed = True
                forward(signal.SIGTERM, None)
            time.sleep(0.1)
        codes = [p.returncode for p in procs]
        log.info("workers_stopped", exit_codes=codes)
        return 1 if failed or any(codes) else 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        holder.close()
        shutil.rmtree(metrics_dir, ignore_errors=True)
