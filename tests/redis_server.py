"""A real ``redis-server`` for tests, on a free loopback port (STYLE: no mocks).

Fixtures: ``redis_server`` (one per test: tests may kill, pause and restart it) and
``redis_server_session`` (one per run, shared; use unique session ids). Both yield a
``RedisServer`` whose ``.url`` stays valid across ``.kill()`` / ``.start()``.

When the binary is missing the tests skip locally but fail in CI (``CI`` set), so a
broken CI image can never turn the Redis tests into silent skips.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ports import free_port

START_TIMEOUT_S = 10.0


def _pings(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def find_binary(name: str, env: str, package: str) -> str:
    """``name`` (or the binary ``env`` names) on the PATH, or skip (locally) / fail (in CI)
    when there is none."""
    binary = shutil.which(os.environ.get(env) or name)
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} not found but CI is set: install it (apt-get {package})")
        pytest.skip(f"{name} not installed (set CI=1 to make this a failure)")
    return binary


def find_redis_server() -> str:
    """The binary to run, or skip (locally) / fail (in CI) when there is none."""
    return find_binary("redis-server", "REDIS_SERVER", "redis-server")


class RedisServer:
    """One redis-server process that can be killed, paused and restarted in place."""

    def __init__(self, binary: str, extra_args: tuple[str, ...] = ()) -> None:
        self.binary = binary
        self.extra_args = extra_args  # e.g. cluster or replica settings
        self.dir = Path(tempfile.mkdtemp(prefix="dxp-redis-"))  # short: unix socket path
        self.port = free_port()
        self.unix_socket = self.dir / "redis.sock"
        self._proc: subprocess.Popen[bytes] | None = None
        self._paused = False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def unix_url(self) -> str:
        return f"unix://{self.unix_socket}"

    def start(self) -> None:
        """Start (again) on the same port; return once it answers PING."""
        if self._proc is not None:
            raise RuntimeError("redis-server already running")
        log = self.dir / "redis.log"
        argv = [
            self.binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--dir", str(self.dir),
            "--unixsocket", str(self.unix_socket),
            "--unixsocketperm", "700",
            "--logfile", str(log),
            *self.extra_args,
        ]  # fmt: skip
        self._proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _pings(self.port):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self._reap(signal.SIGKILL)
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                raise RuntimeError(f"redis-server did not start on {self.port}:\n{tail}")
            time.sleep(0.01)

    def stop(self) -> None:
        """Graceful shutdown (SIGTERM); nothing is persisted."""
        self._reap(signal.SIGTERM)

    def kill(self) -> None:
        """Crash it (SIGKILL): clients see their connections reset."""
        self._reap(signal.SIGKILL)

    def pause(self) -> None:
        """Freeze it (SIGSTOP): connections stay open but nothing answers."""
        if self._proc is not None:
            self._proc.send_signal(signal.SIGSTOP)
            self._paused = True

    def resume(self) -> None:
        if self._proc is not None and self._paused:
            self._proc.send_signal(signal.SIGCONT)
            self._paused = False

    def cleanup(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _reap(self, sig: signal.Signals) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if self._paused and sig != signal.SIGKILL:
            proc.send_signal(signal.SIGCONT)
        self._paused = False
        if proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _running_server() -> Iterator[RedisServer]:
    binary = find_redis_server()
    for attempt in range(3):
        server = RedisServer(binary)
        try:
            server.start()
        except RuntimeError:
            # Another process may have taken the free port in between: try another.
            server.cleanup()
            if attempt == 2:
                raise
            continue
        try:
            yield server
        finally:
            server.cleanup()
        return


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    yield from _running_server()


@pytest.fixture(scope="session")
def redis_server_session() -> Iterator[RedisServer]:
    yield from _running_server()
