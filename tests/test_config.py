"""Config: TOML + env overrides (``proxy/config.py``): the shipped config and its
examples load, environment variables override nested keys and route entries, routes
may come from the environment alone, sections stay frozen. Routing:
tests/test_config_routes.py; errors: tests/test_config_errors.py.
"""

from __future__ import annotations

import dataclasses
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


def test_shipped_config_examples_are_valid_routes_once_uncommented(tmp_path: Path) -> None:
    """The per-model examples in config.toml (required session_defaults and all) load."""
    text = (ROOT / "config.toml").read_text()
    examples = text[text.index("# Examples for real deployments") :].splitlines()[1:]
    uncommented = [line.removeprefix("# ") for line in examples if line.startswith("# ")]
    assert uncommented.count("[[routes]]") >= 4, uncommented
    path = tmp_path / "examples.toml"
    path.write_text('[auth]\nmode = "none"\n\n' + "\n".join(uncommented) + "\n")
    cfg = load_config(path, environ={})
    nemotron = cfg.route_for("nvidia/nemotron-voicechat")
    assert nemotron is not None
    assert nemotron.session_defaults["extra_body"] == {"auto_response": True}
    minicpm = cfg.route_for("openbmb/MiniCPM-o-4_5")
    assert minicpm is not None and "ref_audio" in minicpm.session_defaults
    personaplex = cfg.route_for("personaplex")
    assert personaplex is not None
    assert personaplex.session_defaults["input_audio_format"] == "pcm_f32le"


def test_env_overrides_nested_keys_and_route_entries() -> None:
    data = {"routes": [{"model": "a", "upstream": "ws://x/v1/realtime"}]}
    env = {
        "DUPLEX_PROXY__SERVER__PORT": "9123",
        "DUPLEX_PROXY__STORE__URL": "redis://127.0.0.1:6379/0",
        "DUPLEX_PROXY__ROUTES__0__MODE": "passthrough",
        "DUPLEX_PROXY__ROUTES__1__MODEL": "b",
        "DUPLEX_PROXY__ROUTES__1__UPSTREAM": "ws://y/v1/realtime",
        "DUPLEX_PROXY__AUTH__MODE": "none",
        "UNRELATED": "1",
    }
    cfg = config_from_dict(apply_env(data, env))
    assert cfg.server.port == 9123
    assert cfg.store.url == "redis://127.0.0.1:6379/0"
    assert [r.model for r in cfg.routes] == ["a", "b"]
    assert cfg.routes[0].mode == "passthrough"


def test_a_config_without_routes_is_refused_by_load_config(tmp_path: Path) -> None:
    path = tmp_path / "empty.toml"
    path.write_text("[server]\nport = 9000\n")
    with pytest.raises(ConfigError, match="routes: no routes"):
        load_config(path, environ={})
    with pytest.raises(ConfigError, match="no routes"):
        load_config(None, environ={})
    cfg = load_config(
        None,
        environ={
            "DUPLEX_PROXY__ROUTES__0__MODEL": "m",
            "DUPLEX_PROXY__ROUTES__0__UPSTREAM": "ws://m:8091/v1/realtime",
            "DUPLEX_PROXY__AUTH__MODE": "none",
        },
    )
    assert cfg.route_for("m") is not None


def test_env_overlays_one_key_of_a_file_route_and_parses_tables_as_json(tmp_path: Path) -> None:
    env = {
        "DUPLEX_PROXY__ROUTES__0__UPSTREAM": "embedded://duplex",
        "DUPLEX_PROXY__ROUTES__0__HEADERS": '{"Authorization": "Bearer t"}',
        "DUPLEX_PROXY__VAD__ECHO_SUPPRESSION": "false",
        "DUPLEX_PROXY__DEFAULT_MODEL": "demo",
    }
    cfg = load_config(ROOT / "config.toml", environ=env)
    assert cfg.routes[0].model == "demo" and cfg.routes[0].upstream == "embedded://duplex"
    assert cfg.routes[0].headers == {"Authorization": "Bearer t"}
    assert cfg.vad.echo_suppression is False and cfg.default_model == "demo"


def test_a_non_numeric_route_index_is_refused() -> None:
    with pytest.raises(ConfigError, match="expected a numeric index"):
        apply_env({"routes": []}, {"DUPLEX_PROXY__ROUTES__FIRST__MODEL": "m"})


def test_sections_stay_frozen_and_replace_revalidates() -> None:
    cfg = load_config(ROOT / "config.toml", environ={})
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.server.port = 1  # type: ignore[misc]
    route = dataclasses.replace(cfg.routes[0], request_duplex=False)
    assert route.request_duplex is False and route.model == "demo"
    with pytest.raises(ValueError, match="greater than 0"):
        dataclasses.replace(cfg.routes[0], max_sessions=-1)
    assert dataclasses.replace(cfg, routes=()).routes == ()
