"""``bench/sessions.py``'s processes for one mode: a ``redis-server`` store when there
are several workers, the reference backend, and ``duplex-proxy serve`` in front of it,
from this checkout or another."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from processes import BACKEND_MAX_SESSIONS, QUIET, ROOT, free_port, start_redis, wait_port


def start_stack(
    kind: str,
    workers: int,
    tmp: Path,
    env: dict[str, str],
    loop: str,
    root: Path = ROOT,
    gather_ms: float | None = None,
    quiet_dbfs: float | None = None,
    inline_rows: int | None = None,
    redis_store: bool = False,
) -> tuple[list[subprocess.Popen[bytes]], str]:
    """Redis (for N > 1 workers, or asked for), the reference backend and the proxy; the
    proxy runs from ``root`` (another checkout, to compare versions side by side)."""
    procs: list[subprocess.Popen[bytes]] = []
    store = ""
    if workers > 1 or redis_store:
        redis, url = start_redis()
        procs.append(redis)
        store = f'[store]\nurl = "{url}"\n'
    up_port = free_port()
    argv = ["reference-backend", "--mode", kind, "--port", str(up_port), "--reply-ms", "1000"]
    argv += ["--max-sessions", str(BACKEND_MAX_SESSIONS)]
    procs.append(
        subprocess.Popen(
            [sys.executable, "-m", "proxy", *argv, "--log-level", "warning"],
            cwd=ROOT,
            env=env,
            **QUIET,
        )
    )
    wait_port(up_port, procs[-1], 30, "reference backend")
    conf = tmp / f"proxy-{kind}-{workers}.toml"
    vad = {"gather_ms": gather_ms, "quiet_gate_dbfs": quiet_dbfs, "inline_rows": inline_rows}
    vad_lines = "".join(f"{k} = {v}\n" for k, v in vad.items() if v is not None)
    conf.write_text(
        '[server]\nmax_sessions = 5000\nlog_level = "warning"\n'
        # (a checkout from before server.event_loop runs asyncio and knows no such key)
        + (f'event_loop = "{loop}"\n' if root == ROOT or loop != "asyncio" else "")
        + '[auth]\nmode = "none"\n'
        + (f"[vad]\n{vad_lines}" if vad_lines else "")
        + f'{store}[[routes]]\nmodel = "m"\nupstream = "ws://127.0.0.1:{up_port}/v1/realtime"\n'
        "max_sessions = 5000\n"
    )
    port = free_port()
    argv = ["serve", "--config", str(conf), "--host", "127.0.0.1", "--port", str(port)]
    # 1 is the default with the in-memory store, in every version; with a shared store
    # the default is one per core (proxy/workers.py), so one worker is asked for.
    if workers > 1 or redis_store:
        argv += ["--workers", str(workers)]
    penv = {**env, "PYTHONPATH": str(root)}
    procs.append(
        subprocess.Popen([sys.executable, "-m", "proxy", *argv], cwd=root, env=penv, **QUIET)
    )
    wait_port(port, procs[-1], 60, "proxy")
    return procs, f"http://127.0.0.1:{port}"
