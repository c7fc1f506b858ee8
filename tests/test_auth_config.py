"""``[auth]``: a real upstream without a chosen mode refuses to start; keys are digests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from proxy.auth.api_keys import hash_key
from proxy.config import ConfigError, config_from_dict, load_config
from tests.servers import ROOT

REAL = {"routes": [{"model": "m", "upstream": "ws://model-server:8091/v1/realtime"}]}
DIGEST = hash_key("dpk_example")


def run(*args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DUPLEX_PROXY__")}
    return subprocess.run(
        [sys.executable, "-m", "proxy", *args],
        cwd=ROOT,
        env=clean | env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_real_upstream_without_an_auth_mode_is_refused_with_how_to_choose() -> None:
    with pytest.raises(ConfigError) as caught:
        config_from_dict(REAL)
    message = str(caught.value)
    assert message.startswith("auth.mode: routes reach a real upstream (routes.0)")
    for choice in ('"api_key"', '"jwt"', '"none"', "DUPLEX_PROXY__AUTH__MODE", "hash-key"):
        assert choice in message
    # Chosen explicitly, by the file or the environment, it starts.
    assert config_from_dict({**REAL, "auth": {"mode": "none"}}).auth.mode == "none"
    # Only embedded reference backends: nothing to spend, nothing to choose.
    demo = config_from_dict({"routes": [{"model": "d", "upstream": "embedded://turn"}]})
    assert demo.auth.mode is None and demo.web_enabled


def test_check_config_and_serve_refuse_it_and_the_environment_can_choose(tmp_path: Path) -> None:
    path = tmp_path / "real.toml"
    path.write_text('[[routes]]\nmodel = "m"\nupstream = "ws://model-server:8091/v1/realtime"\n')
    checked = run("check-config", str(path))
    assert checked.returncode == 2, checked
    assert "auth.mode: routes reach a real upstream" in checked.stderr
    served = run("serve", "--config", str(path), "--port", "0")
    assert served.returncode == 2 and "auth.mode" in served.stderr
    assert "Traceback" not in served.stderr
    fixed = run("check-config", str(path), DUPLEX_PROXY__AUTH__MODE="api_key")
    assert fixed.returncode == 2 and 'mode "api_key" needs at least one entry' in fixed.stderr
    keys = f'[{{"id": "a", "sha256": "{DIGEST}"}}]'
    env = {"DUPLEX_PROXY__AUTH__MODE": "api_key", "DUPLEX_PROXY__AUTH__KEYS": keys}
    ok = run("check-config", str(path), **env)
    assert ok.returncode == 0 and "auth: mode=api_key key_ids=a web_page=off" in ok.stdout
    assert DIGEST not in ok.stdout, "keys are named by id only"
    config = load_config(path, environ=env)
    assert config.auth.keys[0].sha256 == DIGEST
    assert not config.web_enabled, "the page is off with auth unless enabled"


@pytest.mark.parametrize(
    ("auth", "message"),
    [
        ({"mode": "api_key", "keys": [{"id": "a", "sha256": "dpk_plain"}]}, "SHA-256 hex digest"),
        ({"mode": "api_key", "keys": [{"id": "a", "sha256": DIGEST.upper()}]}, "64 lowercase"),
        (
            {
                "mode": "api_key",
                "keys": [{"id": "a", "sha256": DIGEST}, {"id": "a", "sha256": DIGEST}],
            },
            "key ids must be unique",
        ),
        ({"mode": "open"}, "auth.mode"),
        ({"mode": "none", "allowed_origins": ["app.example.com"]}, "scheme://host"),
        ({"mode": "none", "metrics_token_sha256": "secret"}, "SHA-256 hex digest"),
        ({"mode": "api_key", "keys": [{"id": "a", "sha256": DIGEST, "max_sessions": 0}]}, "keys"),
    ],
)
def test_bad_auth_settings_are_named(auth: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from_dict({**REAL, "auth": auth})


def test_hash_key_prints_the_digest_of_a_key_read_from_stdin() -> None:
    done = run("hash-key", stdin="dpk_example\n")
    assert done.returncode == 0 and done.stdout.strip() == DIGEST
    made = run("hash-key", "--generate")
    key, digest = (line.split()[-1] for line in made.stdout.splitlines())
    assert key.startswith("dpk_") and digest == hash_key(key)
    assert run("hash-key", stdin="").returncode == 2
