"""Config: TOML + env overrides, routing by exact name and glob, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxy.config import ConfigError, apply_env, config_from_dict, load_config

ROOT = Path(__file__).resolve().parents[1]


def test_shipped_config_routes_demo_to_embedded_turn_backend() -> None:
    cfg = load_config(ROOT / "config.toml", environ={})
    route = cfg.route_for("demo")
    assert route is not None
    assert route.embedded_kind == "turn"
    assert cfg.store.url == "memory://"


def test_env_overrides_nested_keys_and_route_entries() -> None:
    data = {"routes": [{"model": "a", "upstream": "ws://x/v1/realtime"}]}
    env = {
        "DUPLEX_PROXY__SERVER__PORT": "9123",
        "DUPLEX_PROXY__STORE__URL": "redis://127.0.0.1:6379/0",
        "DUPLEX_PROXY__ROUTES__0__MODE": "passthrough",
        "DUPLEX_PROXY__ROUTES__1__MODEL": "b",
        "DUPLEX_PROXY__ROUTES__1__UPSTREAM": "ws://y/v1/realtime",
        "UNRELATED": "1",
    }
    cfg = config_from_dict(apply_env(data, env))
    assert cfg.server.port == 9123
    assert cfg.store.url == "redis://127.0.0.1:6379/0"
    assert [r.model for r in cfg.routes] == ["a", "b"]
    assert cfg.routes[0].mode == "passthrough"


def test_exact_route_beats_glob_and_glob_matches() -> None:
    cfg = config_from_dict(
        {
            "routes": [
                {"model": "nvidia/*", "upstream": "ws://glob/v1/realtime"},
                {"model": "nvidia/special", "upstream": "ws://exact/v1/realtime"},
            ]
        }
    )
    special = cfg.route_for("nvidia/special")
    other = cfg.route_for("nvidia/other")
    assert special is not None and special.upstream == "ws://exact/v1/realtime"
    assert other is not None and other.upstream == "ws://glob/v1/realtime"
    assert cfg.route_for("openbmb/x") is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"routes": [{"model": "a", "upstream": "http://x"}]}, "upstream must be"),
        ({"routes": [{"model": "a", "upstream": "ws://x", "mode": "magic"}]}, "mode must be"),
        ({"routes": [{"model": "a", "upstream": "embedded://gpu"}]}, "embedded upstream"),
        ({"routes": [{"upstream": "ws://x"}]}, "needs a non-empty string 'model'"),
        ({"server": {"port": "eighty"}}, "expected an integer"),
        ({"server": {"nope": 1}}, "unknown keys: nope"),
        ({"vad": {"threshold": 1.5}}, "vad.threshold"),
        ({"store": {"url": "mysql://x"}}, "store.url"),
        ({"bogus": {}}, "unknown top-level keys"),
    ],
)
def test_invalid_config_is_refused_with_the_key_named(
    data: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from_dict(data)


def test_missing_config_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "absent.toml", environ={})
