"""``duplex-proxy check-config``, ``--version`` and serve's start-up route log, run for real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from proxy.__main__ import package_version

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DUPLEX_PROXY__")}
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-m", "proxy", *args],
        cwd=cwd,
        env=environ,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_version_prints_the_package_version() -> None:
    done = run("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"duplex-proxy {package_version()}"
    assert package_version()[0].isdigit()


def test_check_config_accepts_the_shipped_config_and_lists_its_routes() -> None:
    done = run("check-config")
    assert done.returncode == 0, done.stderr
    assert "config.toml: OK, 1 route(s)" in done.stdout
    assert "routes.0: demo -> embedded://turn" in done.stdout


def test_check_config_reports_every_problem_and_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[server]\nmax_sessions = -1\nmax_frame_byte = 1\n\n[[routes]]\nmodel = "m"\n'
        'upstream = "http://m"\n\n[[routes]]\nmodel = "m"\nupstream = "ws://n"\n'
    )
    done = run("check-config", str(bad))
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert lines[0] == f"duplex-proxy: invalid configuration in {bad}:"
    expected = [
        "server.max_sessions (line 2): Input should be greater than 0",
        "server.max_frame_byte (line 3): unknown key; did you mean 'max_frame_bytes'?",
        "routes.0.upstream (line 7): upstream must be ws://",
        "routes.1.model (line 10): duplicate of routes.0: 'm'",
        "auth.mode: routes reach a real upstream (routes.0, routes.1) but [auth] mode is not set",
    ]
    for needle in expected:
        assert any(line.strip().startswith(needle) for line in lines), (needle, lines)
    assert len(lines) == 1 + len(expected), lines


def test_no_routes_is_refused_where_it_used_to_listen_silently(tmp_path: Path) -> None:
    # No config.toml in the working directory and no routes in the environment.
    done = run("serve", "--port", "0", cwd=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "routes: no routes" in done.stderr and "Traceback" not in done.stderr
    checked = run("check-config", cwd=tmp_path)
    assert checked.returncode == 2 and "routes: no routes" in checked.stderr


def test_check_config_names_the_variable_behind_a_bad_value() -> None:
    done = run("check-config", DUPLEX_PROXY__STORE__TIMEOUT_S="0")
    assert done.returncode == 2
    assert "store.timeout_s (from DUPLEX_PROXY__STORE__TIMEOUT_S)" in done.stderr


def test_serve_logs_each_route_with_its_upstream_but_no_secret(tmp_path: Path) -> None:
    config = tmp_path / "proxy.toml"
    config.write_text(
        '[server]\nhost = "127.0.0.1"\nport = 0\n\n[auth]\nmode = "none"\n\n'
        '[[routes]]\nmodel = "demo"\nupstream = "embedded://turn"\n\n'
        '[[routes]]\nmodel = "vendor/*"\nupstream = "wss://user:pw@voice.invalid:9443/v1/realtime?key=k1"\n'
        'headers = { Authorization = "Bearer s3cret-token" }\n'
    )
    err = tmp_path / "serve.err"
    with err.open("wb") as ferr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "proxy", "serve", "--config", str(config)],
            cwd=ROOT,
            env={k: v for k, v in os.environ.items() if not k.startswith("DUPLEX_PROXY__")},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=ferr,
        )
        try:
            deadline = time.monotonic() + 60
            while '"listening"' not in err.read_text() and time.monotonic() < deadline:
                if proc.poll() is not None:
                    pytest.fail(f"serve exited {proc.returncode}: {err.read_text()}")
                time.sleep(0.1)
        finally:
            proc.kill()
            proc.wait(timeout=10)
    text = err.read_text()
    routes = [json.loads(line) for line in text.splitlines() if '"event": "route"' in line]
    assert [r["model"] for r in routes] == ["demo", "vendor/*"], text
    assert routes[1]["upstream"] == "wss://voice.invalid:9443/v1/realtime"
    assert routes[1]["header_names"] == ["Authorization"]
    for secret in ("s3cret-token", "pw@", "key=k1"):
        assert secret not in text
