"""Config: TOML + env overrides, routing by exact name and glob, clear errors."""

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


def test_exact_route_beats_glob_and_glob_matches() -> None:
    cfg = config_from_dict(
        {
            "routes": [
                {"model": "nvidia/*", "upstream": "ws://glob/v1/realtime"},
                {"model": "nvidia/special", "upstream": "ws://exact/v1/realtime"},
            ],
            "auth": {"mode": "none"},
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
        ({"routes": [{"model": "a", "upstream": "http://x"}]}, "routes.0.upstream: upstream must"),
        ({"routes": [{"model": "a", "upstream": "ws://x", "mode": "magic"}]}, "routes.0.mode"),
        ({"routes": [{"model": "a", "upstream": "embedded://gpu"}]}, "embedded upstream"),
        ({"routes": [{"model": "a", "upstream": "ws:///v1"}]}, "names no host"),
        ({"routes": [{"model": "a", "upstream": "ws://h:99999/"}]}, "bad port"),
        ({"routes": [{"upstream": "ws://x"}]}, "routes.0.model: required key is missing"),
        ({"routes": [{"model": "", "upstream": "ws://x"}]}, "routes.0.model"),
        ({"server": {"port": "eighty"}}, "server.port: Input should be a valid integer"),
        (
            {"server": {"max_sesions": 1}},
            "server.max_sesions: unknown key; did you mean 'max_sessions'",
        ),
        ({"server": {"max_sessions": -1}}, "server.max_sessions: Input should be greater than 0"),
        ({"server": {"max_sessions": 0}}, "server.max_sessions"),
        ({"server": {"log_level": "loud"}}, "server.log_level"),
        ({"store": {"disconnect_grace_s": -5}}, "store.disconnect_grace_s"),
        (
            {"store": {"url": "redis://h:6379", "disconnect_grace_s": 0.9}},
            "store.disconnect_grace_s 0.9 s is too short for store.timeout_s 0.25 s: one "
            "timed-out write and its retry would let a live session's keys expire; give at "
            "least 1.5 s",
        ),
        ({"vad": {"threshold": 1.5}}, "vad.threshold"),
        ({"vad": {"max_batch": 0}}, "vad.max_batch"),
        ({"store": {"url": "mysql://x"}}, "store.url"),
        ({"store": {"url": "redis://"}}, "store.url: store url names no host"),
        ({"bogus": {}}, "bogus: unknown key"),
        (
            {"routes": [{"model": "a", "upstream": "ws://x", "max_sessions": -1}]},
            "routes.0.max_sessions",
        ),
        (
            {
                "routes": [
                    {"model": "m", "upstream": "ws://x"},
                    {"model": "m", "upstream": "ws://y"},
                ]
            },
            "routes.1.model: duplicate of routes.0",
        ),
        (
            {
                "routes": [
                    {"model": "a/*", "upstream": "ws://x"},
                    {"model": "a/b-*", "upstream": "ws://y"},
                ]
            },
            "routes.1.model: 'a/b-\\*' can never match: routes.0",
        ),
        (
            {"routes": [{"model": "a", "upstream": "ws://x"}], "default_model": "b"},
            "default_model: 'b' matches no route",
        ),
    ],
)
def test_invalid_config_is_refused_with_the_key_named(
    data: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from_dict(data)


@pytest.mark.parametrize(
    "store",
    [
        {"url": "redis://h:6379", "disconnect_grace_s": 1.5},
        {"url": "redis://h:6379", "disconnect_grace_s": 0.6, "timeout_s": 0.1},
        {"url": "redis://h:6379", "disconnect_grace_s": 3.75, "timeout_s": 1.0},
        {"url": "memory://", "disconnect_grace_s": 0.3},  # in process: no write times out
    ],
)
def test_a_grace_with_room_for_a_timed_out_write_and_its_retry_is_taken(
    store: dict[str, object],
) -> None:
    assert (
        config_from_dict({"store": store}).store.disconnect_grace_s == store["disconnect_grace_s"]
    )


def test_missing_config_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "absent.toml", environ={})


BAD_TOML = """\
[auth]
mode = "none"

[server]
max_sesions = 10
port = -1

[[routes]]
model = "a/*"
upstream = "ws://x/v1/realtime"

[[routes]]
model = "a/b*"
upstream = "http://y"
"""


def test_every_problem_is_reported_with_its_toml_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(BAD_TOML)
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={})
    found = {str(p) for p in caught.value.problems}
    assert "server.max_sesions (line 5): unknown key; did you mean 'max_sessions'?" in found
    assert any(p.startswith("server.port (line 6): ") for p in found), found
    assert any(p.startswith("routes.1.upstream (line 14): upstream must be") for p in found)
    assert any(p.startswith("routes.1.model (line 13): 'a/b*' can never match") for p in found)
    assert len(found) == 4, found


def test_a_problem_set_by_the_environment_names_the_variable() -> None:
    env = {"DUPLEX_PROXY__SERVER__MAX_SESSIONS": "-1"}
    with pytest.raises(ConfigError, match=r"server\.max_sessions \(from DUPLEX_PROXY__SERVER__"):
        load_config(ROOT / "config.toml", environ=env)


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


def test_exact_route_after_a_glob_is_not_shadowed() -> None:
    cfg = config_from_dict(
        {
            "routes": [
                {"model": "a/*", "upstream": "ws://x/v1/realtime"},
                {"model": "a/b", "upstream": "ws://y/v1/realtime"},
            ],
            "auth": {"mode": "none"},
        }
    )
    route = cfg.route_for("a/b")
    assert route is not None and route.upstream == "ws://y/v1/realtime"


def test_sections_stay_frozen_and_replace_revalidates() -> None:
    cfg = load_config(ROOT / "config.toml", environ={})
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.server.port = 1  # type: ignore[misc]
    route = dataclasses.replace(cfg.routes[0], request_duplex=False)
    assert route.request_duplex is False and route.model == "demo"
    with pytest.raises(ValueError, match="greater than 0"):
        dataclasses.replace(cfg.routes[0], max_sessions=-1)
    assert dataclasses.replace(cfg, routes=()).routes == ()


def test_missing_and_unparsable_files_are_clear_errors(tmp_path: Path) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text("[server\nport = 1\n")
    with pytest.raises(ConfigError, match=r"invalid TOML: .*line 1"):
        load_config(broken, environ={})


def test_a_misspelt_section_in_the_environment_is_not_ignored() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(ROOT / "config.toml", environ={"DUPLEX_PROXY__SERVR__PORT": "1"})
    assert [str(p) for p in caught.value.problems] == [
        "servr (from DUPLEX_PROXY__SERVR__PORT): unknown key; did you mean 'server'?"
    ]


@pytest.mark.parametrize(
    ("first", "second", "shadowed"),
    [
        ("a/*", "a/b*", True),
        ("nvidia/*", "nvidia/[ab]*", True),
        ("*", "x?", True),
        ("a?c", "a*c", False),  # a*c also matches "abbc", which a?c does not
        ("a/b*", "a/*", False),
        ("a*", "b*", False),
    ],
)
def test_a_glob_is_refused_only_when_an_earlier_glob_covers_it(
    first: str, second: str, shadowed: bool
) -> None:
    data = {
        "routes": [
            {"model": first, "upstream": "ws://x/v1/realtime"},
            {"model": second, "upstream": "ws://y/v1/realtime"},
        ],
        "auth": {"mode": "none"},
    }
    if shadowed:
        with pytest.raises(ConfigError, match=r"routes\.1\.model: .* can never match"):
            config_from_dict(data)
    else:
        assert len(config_from_dict(data).routes) == 2
