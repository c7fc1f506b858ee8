"""The deployment example carries a config the proxy accepts."""

from __future__ import annotations

import textwrap
import tomllib
from pathlib import Path

from proxy.config import config_from_dict

SIDECAR = Path(__file__).resolve().parents[1] / "deploy" / "kubernetes" / "sidecar.yaml"


def embedded_config_toml(text: str) -> str:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "config.toml: |") + 1
    block = []
    for line in lines[start:]:
        if line.strip() and not line.startswith("    "):
            break
        block.append(line)
    return textwrap.dedent("\n".join(block))


def test_sidecar_configmap_is_a_valid_proxy_config() -> None:
    cfg = config_from_dict(tomllib.loads(embedded_config_toml(SIDECAR.read_text())))
    route = cfg.route_for("nvidia/nemotron-voicechat")
    assert route is not None and route.upstream.startswith("ws://127.0.0.1:")
    assert cfg.store.url.startswith("redis://")
