"""Real processes on loopback for the benchmarks: redis-server, reference backends and
proxy replicas (and the corpus clips they are fed)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import wave
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# A reference backend deployed for a benchmark's many sessions (vLLM-Omni's default,
# and the stand-in's, is one session at once).
BACKEND_MAX_SESSIONS = 10_000
QUIET: dict[str, Any] = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen[bytes], within_s: float, what: str) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on {port}")


def redis_argv(port: int, *extra: str) -> list[str]:
    """A loopback ``redis-server`` without snapshots (``REDIS_SERVER`` names another binary)."""
    binary = shutil.which(os.environ.get("REDIS_SERVER") or "redis-server")
    if binary is None:
        raise SystemExit("redis-server not found (apt-get install redis-server, or REDIS_SERVER=)")
    return [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", *extra]


def start_redis(*extra: str) -> tuple[subprocess.Popen[bytes], str]:
    """``redis-server`` listening (append-only file off unless ``extra`` says); its URL."""
    port = free_port()
    argv = redis_argv(port, *(extra or ("--appendonly", "no")))
    proc = subprocess.Popen(argv, **QUIET)
    wait_port(port, proc, 10, "redis-server")
    return proc, f"redis://127.0.0.1:{port}/0"


def read_clip(path: Path, rate: int = 24000) -> bytes:
    """A corpus clip's PCM16 mono samples."""
    with wave.open(str(path)) as w:
        assert w.getframerate() == rate and w.getsampwidth() == 2 and w.getnchannels() == 1
        return w.readframes(w.getnframes())


def reference_backend(
    kind: str, reply_ms: int, env: dict[str, str], *extra: str
) -> tuple[subprocess.Popen[bytes], str]:
    """``duplex-proxy reference-backend`` listening (``extra``: more of its options); returns
    it and its realtime URL."""
    port = free_port()
    argv = ["reference-backend", "--mode", kind, "--port", str(port)]
    argv += ["--reply-ms", str(reply_ms), "--log-level", "warning"]
    # Deployed for the benchmark's many sessions (vLLM-Omni's own default is one).
    argv += ["--max-sessions", str(BACKEND_MAX_SESSIONS), *extra]
    proc = subprocess.Popen([sys.executable, "-m", "proxy", *argv], cwd=ROOT, env=env, **QUIET)
    wait_port(port, proc, 20, f"reference backend {kind}")
    return proc, f"ws://127.0.0.1:{port}/v1/realtime"


def proxy_replica(
    config: Path, env: dict[str, str], out: Any = subprocess.DEVNULL
) -> tuple[subprocess.Popen[bytes], str]:
    """``duplex-proxy serve`` listening; returns it and its realtime URL."""
    port = free_port()
    argv = ["serve", "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--workers", "1"]  # one process per replica: its figures are the replica's
    proc = subprocess.Popen(
        [sys.executable, "-m", "proxy", *argv], cwd=ROOT, env=env, stdout=out, stderr=out
    )
    wait_port(port, proc, 30, "proxy replica")
    return proc, f"ws://127.0.0.1:{port}/v1/realtime"


def route(model: str, upstream: str) -> str:
    return f'[[routes]]\nmodel = "{model}"\nupstream = "{upstream}"\n'


def resume_event(session_id: str, token: str, last_seq: int) -> dict[str, Any]:
    """``session.resume`` of session ``session_id`` from ``last_seq`` (docs/protocol.md)."""
    return {
        "type": "session.resume",
        "session_id": session_id,
        "resume_token": token,
        "last_received_server_event_seq": last_seq,
    }


def stop_all(procs: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM every process (newest first), then kill what has not exited."""
    for p in reversed(procs):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in reversed(procs):
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
