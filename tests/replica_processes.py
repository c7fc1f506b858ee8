"""Proxy replicas as processes (``python -m proxy serve``) sharing one real Redis, for the
tests of a resume across processes: a replica once ready, two in front of a turn-based
reference backend, and the loss of the one that owns a session mid-answer."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.proxy_process import ProxyProcess, proxy_process
from tests.resume_client import Tracked, wait_persisted
from tests.servers import Client, reference


@asynccontextmanager
async def replica_process(
    tmp_path: Path, name: str, upstream: str, redis_url: str, **store: float
) -> AsyncIterator[ProxyProcess]:
    """``python -m proxy serve`` with the store at ``redis_url`` (and ``store`` settings),
    once its /readyz says "ready"."""
    settings = "".join(f"{key} = {value}\n" for key, value in store.items())
    config = (
        f'[server]\nlog_level = "info"\n[auth]\nmode = "none"\n'
        f'[store]\nurl = "{redis_url}"\n{settings}'
        # Hand over at once on SIGTERM: these tests are about the handover, and a
        # reply must still be running when it happens (tests/test_drain.py: the delay).
        "[drain]\nreadiness_delay_s = 0\n"
        f'[[routes]]\nmodel = "m"\nupstream = "{upstream}"\n'
    )
    async with proxy_process(tmp_path, name, config) as replica:
        await replica.until_ready()
        yield replica


@asynccontextmanager
async def replica_processes(
    tmp_path: Path, redis_url: str, reply_ms: int, **store: float
) -> AsyncIterator[tuple[ProxyProcess, ProxyProcess]]:
    """A turn-based reference backend (in this process) behind replica processes "a" and
    "b" sharing the Redis at ``redis_url``."""
    async with (
        reference("turn", reply_ms=reply_ms) as up,
        replica_process(tmp_path, "a", up, redis_url, **store) as a,
        replica_process(tmp_path, "b", up, redis_url, **store) as b,
    ):
        yield a, b


async def lose_owner(
    c: Client, s: Tracked, owner: ProxyProcess, sig: signal.Signals, redis_url: str
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
