"""What the flood tests run and measure: the proxy as a process (``duplex-proxy serve``) with
given ``[server]`` settings and one route, a process's resident memory, and the
``session.created`` a duplex upstream opens with."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from tests.cli_processes import Proc, Procs, wait_http_ok
from tests.ports import free_port


async def served(processes: Procs, tmp_path: Path, server: str, upstream: str) -> tuple[Proc, str]:
    """``duplex-proxy serve`` on loopback with ``server`` under ``[server]``, no auth and
    one route (``m``) to ``upstream``, answering: the process and its base URL."""
    config = tmp_path / "proxy.toml"
    config.write_text(
        f'[server]\nhost = "127.0.0.1"\n{server}[auth]\nmode = "none"\n'
        f'\n[[routes]]\nmodel = "m"\nupstream = "{upstream}"\n'
    )
    port = free_port()
    proc = processes.spawn("proxy", ["serve", "--config", str(config), "--port", str(port)])
    base = f"http://127.0.0.1:{port}"
    await wait_http_ok(proc, base)
    return proc, base


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def created() -> str:
    capabilities = {
        "supports_barge_in": False,
        "supports_playback_ack": True,
        "supports_client_commit": True,
        "supports_session_resume": True,
        "supports_multi_session": True,
    }
    session = {"id": f"duplex-{uuid.uuid4().hex}", "model": "m", "capabilities": capabilities}
    return json.dumps({"type": "session.created", "session": session, "resume_token": "t"})
