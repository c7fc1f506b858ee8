"""The resume bench's processes on loopback: a ``redis-server``, the reference backends
(``turn`` and ``duplex-no-barge-in``; with longer replies too, for the clients that speak
over an answer) and two proxy replicas sharing the Redis store (``bench/resume.py``)."""

from __future__ import annotations

import base64
import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from processes import proxy_replica, reference_backend, route, start_redis, stop_all

KINDS = ("turn", "duplex-no-barge-in")


@contextlib.contextmanager
def stack(
    reply_ms: int, workdir: Path, logs: Path | None = None, long_reply_ms: int = 0
) -> Iterator[tuple[list[str], str]]:
    """redis-server, reference backends, two proxy replicas; yields their ws bases.

    ``long_reply_ms``: two more backends with longer replies, routed as ``<kind>-long``
    (for the clients that speak over an answer)."""
    procs: list[subprocess.Popen[bytes]] = []
    env = {**os.environ, "DUPLEX_PROXY__SERVER__LOG_LEVEL": "warning"}
    try:
        redis, redis_url = start_redis("--appendonly", "no", "--dir", str(workdir))
        procs.append(redis)
        routes = []
        for kind in KINDS:
            proc, url = reference_backend(kind, reply_ms, env)
            procs.append(proc)
            routes.append(route(kind, url))
            if long_reply_ms:
                proc, url = reference_backend(kind, long_reply_ms, env)
                procs.append(proc)
                routes.append(route(f"{kind}-long", url))
        config = workdir / "proxy.toml"
        # One key for both replicas: the upstream's own session moves along sealed.
        key = base64.b64encode(os.urandom(32)).decode()
        config.write_text(
            f'[server]\nlog_level = "{"info" if logs else "warning"}"\n'
            f'[store]\nurl = "{redis_url}"\nsecret_key = "{key}"\n[auth]\nmode = "none"\n\n'
            + "\n".join(routes)
        )
        bases = []
        replica_env = {k: v for k, v in env.items() if k != "DUPLEX_PROXY__SERVER__LOG_LEVEL"}
        for i in range(2):
            out: Any = subprocess.DEVNULL
            if logs is not None:
                logs.mkdir(parents=True, exist_ok=True)
                out = (logs / f"replica-{i}.log").open("wb")
            proc, url = proxy_replica(config, replica_env, out)
            procs.append(proc)
            bases.append(url)
        yield bases, redis_url
    finally:
        stop_all(procs)
