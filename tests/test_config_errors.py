"""Config errors are clear (``proxy/config.py``): an invalid config is refused with the
key named, every problem is reported with its TOML line or the environment variable
that set it, a misspelt section is not ignored, a missing or unparsable file says so.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from proxy.config import ConfigError, config_from_dict, load_config

ROOT = Path(__file__).resolve().parents[1]


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
