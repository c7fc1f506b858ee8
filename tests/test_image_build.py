"""The container image's build steps, run without a container engine.

The Dockerfile builds its virtualenv with ``deploy/build-venv.sh``; this runs the same
script into a clean temporary directory (from PyPI, like the image build), then checks
what the image would hold: the command, the imports, the Silero ONNX model, no torch,
the shipped config passing check-config, and the image's HEALTHCHECK command passing
against a proxy served from that virtualenv.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from proxy.__main__ import package_version
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"

pytestmark = pytest.mark.slow


def clean_env(**extra: str) -> dict[str, str]:
    drop = ("DUPLEX_PROXY__", "PYTHONPATH", "VIRTUAL_ENV")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    if not os.environ.get("UV") and shutil.which("uv") is None:
        pytest.fail("uv is required (the image is built with it)")
    target = tmp_path_factory.mktemp("image") / "opt-duplex-proxy"
    done = subprocess.run(
        ["sh", str(ROOT / "deploy" / "build-venv.sh"), str(target), str(ROOT)],
        cwd=tmp_path_factory.getbasetemp(),
        env=clean_env(BUILD_PYTHON=sys.executable),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"duplex-proxy {package_version()}"
    yield target


def test_the_dockerfile_builds_with_the_script_this_test_runs() -> None:
    text = DOCKERFILE.read_text()
    assert "RUN sh deploy/build-venv.sh /opt/duplex-proxy /src" in text
    assert "COPY --from=build /opt/duplex-proxy /opt/duplex-proxy" in text
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    for line in text.splitlines():
        if line.startswith("COPY ") and "--from" not in line:
            for src in line.split()[1:-1]:
                assert (ROOT / src).exists(), src
                assert f"!{src}" in ignore, f"{src} is left out of the build context"


def test_the_venv_holds_the_proxy_the_model_and_no_torch(venv: Path, tmp_path: Path) -> None:
    probe = (
        "import importlib.util, os, json, proxy.app, proxy.server, shim.session\n"
        "from proxy.vad import VadRunner, default_model_path\n"
        "VadRunner()\n"
        "print(json.dumps({'model': default_model_path(),"
        " 'torch': importlib.util.find_spec('torch') is not None,"
        " 'where': os.path.dirname(proxy.app.__file__)}))\n"
    )
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    found = json.loads(done.stdout)
    assert Path(found["model"]).is_file() and found["model"].endswith("silero_vad.onnx")
    assert found["torch"] is False
    assert found["where"].startswith(str(venv)), "imported from the source tree, not the venv"


def test_the_shipped_config_passes_check_config_in_the_venv(venv: Path) -> None:
    done = subprocess.run(
        [str(venv / "bin" / "duplex-proxy"), "check-config", str(ROOT / "config.toml")],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def healthcheck_command() -> list[str]:
    lines = DOCKERFILE.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("HEALTHCHECK"))
    text = " ".join(line.rstrip("\\").strip() for line in lines[start : start + 3])
    command: list[str] = json.loads(text[text.index("CMD ") + 4 :].split("]", 1)[0] + "]")
    return command


def test_the_image_healthcheck_passes_against_the_venv_proxy(venv: Path, tmp_path: Path) -> None:
    port = free_port()
    env = clean_env(
        PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        DUPLEX_PROXY__SERVER__PORT=str(port),
        DUPLEX_PROXY__SERVER__HOST="127.0.0.1",
    )
    check = healthcheck_command()
    assert check[0] == "python"
    err = (tmp_path / "serve.err").open("wb")
    proc = subprocess.Popen(
        [str(venv / "bin" / "duplex-proxy"), "serve", "--config", str(ROOT / "config.toml")],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=err,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (tmp_path / "serve.err").read_text()
            done = subprocess.run(check, env=env, capture_output=True, timeout=30, check=False)
            if done.returncode == 0:
                break
            assert time.monotonic() < deadline, done.stderr
            time.sleep(0.2)
    finally:
        proc.kill()
        proc.wait(timeout=10)
        err.close()
    after = subprocess.run(check, env=env, capture_output=True, timeout=30, check=False)
    assert after.returncode != 0, "the healthcheck passes with no proxy listening"
