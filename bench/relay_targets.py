"""The relays ``bench/relay.py`` compares, as real processes on loopback: Debian's nginx
as a WebSocket reverse proxy, and ``duplex-proxy serve`` on a passthrough route, from
this checkout or another (``versions``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from processes import QUIET, ROOT, free_port, wait_port

NGINX_CONF = """
worker_processes 1;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  upstream echo {{ server 127.0.0.1:{upstream}; keepalive 64; }}
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://echo;
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection "upgrade";
      proxy_read_timeout 3600s;
      proxy_buffering off;
    }}
  }}
}}
"""


def children(pid: int) -> list[int]:
    """``pid`` and its direct children (nginx's master and its workers)."""
    found = [pid]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid:
                found.append(int(entry.name))
    return found


def start_nginx(tmp: Path, upstream_port: int) -> tuple[subprocess.Popen[bytes], int]:
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    port = free_port()
    for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (tmp / sub).mkdir(exist_ok=True)
    conf = tmp / "nginx.conf"
    conf.write_text(NGINX_CONF.format(tmp=tmp, upstream=upstream_port, port=port))
    proc = subprocess.Popen([nginx, "-c", str(conf), "-p", str(tmp)], **QUIET)
    wait_port(port, proc, 10, "nginx")
    return proc, port


def start_proxy(
    tmp: Path, upstream_port: int, loop: str, root: Path = ROOT
) -> tuple[subprocess.Popen[bytes], int]:
    """The proxy, run from ``root`` (another checkout, to compare versions side by side)."""
    port = free_port()
    conf = tmp / f"proxy-{loop}-{abs(hash(root))}.toml"
    conf.write_text(
        '[server]\nmax_sessions = 2000\nlog_level = "warning"\n'
        f'event_loop = "{loop}"\n[auth]\nmode = "none"\n'
        f'[[routes]]\nmodel = "echo"\nupstream = "ws://127.0.0.1:{upstream_port}/v1/realtime"\n'
        'mode = "passthrough"\nmax_sessions = 2000\n'
    )
    argv = ["serve", "--config", str(conf), "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--workers", "1"]  # one process, as nginx runs one worker here
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.Popen([sys.executable, "-m", "proxy", *argv], cwd=root, env=env, **QUIET)
    wait_port(port, proc, 30, "proxy")
    return proc, port


def versions(base: Path | None, base_last: bool) -> list[tuple[str, Path]]:
    """The proxy's versions to run in order: this checkout, and ``base`` when given
    (first, or last: alternate the order across runs, as the machine's load drifts)."""
    if base is None:
        return [("proxy", ROOT)]
    both = [("base", base), ("proxy", ROOT)]
    return both[::-1] if base_last else both
