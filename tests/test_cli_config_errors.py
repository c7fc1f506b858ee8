"""The command line refuses a bad configuration, run for real (``python -m proxy serve``
subprocesses): an invalid config (bad TOML, an unknown key, a bad type, a bad route
upstream, a bad environment value) or a missing file exits 2 naming the problem, no
traceback.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.cli_processes import PY, clean_env
from tests.ports import free_port
from tests.servers import ROOT

BAD_CONFIGS = [
    pytest.param("[server\nport = 1\n", None, ("invalid configuration", "line"), id="bad-toml"),
    pytest.param(
        "[server]\nbogus_key = 1\n", None, ("invalid configuration", "bogus_key"), id="unknown-key"
    ),
    pytest.param(
        '[server]\nport = "eighty"\n', None, ("invalid configuration", "server.port"), id="bad-type"
    ),
    pytest.param(
        '[[routes]]\nmodel = "x"\nupstream = "http://example.com/"\n',
        None,
        ("invalid configuration", "routes.0", "upstream"),
        id="bad-route-upstream",
    ),
    pytest.param(
        "[server]\nport = 9\n",
        {"DUPLEX_PROXY__SERVER__MAX_SESSIONS": "lots"},
        ("invalid configuration", "server.max_sessions"),
        id="bad-env-value",
    ),
]


@pytest.mark.parametrize(("text", "env", "needles"), BAD_CONFIGS)
def test_invalid_config_exits_2_naming_the_problem(
    tmp_path: Path, text: str, env: dict[str, str] | None, needles: tuple[str, ...]
) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(text)
    done = subprocess.run(
        [PY, "-m", "proxy", "serve", "--config", str(config), "--port", str(free_port())],
        cwd=ROOT,
        env=clean_env(**(env or {})),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    for needle in needles:
        assert needle in done.stderr, f"{needle!r} not in stderr: {done.stderr!r}"
    assert "Traceback" not in done.stderr


def test_missing_config_file_exits_2(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    done = subprocess.run(
        [PY, "-m", "proxy", "serve", "--config", str(missing)],
        cwd=ROOT,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "not found" in done.stderr and str(missing) in done.stderr
