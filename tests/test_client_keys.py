"""The project's own clients reach a proxy with client authentication: ``probe`` and
``talk`` send ``--api-key`` (or ``$DUPLEX_PROXY_API_KEY``) as a bearer token."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.auth_helpers import KEY_A, api_keys, auth_config
from tests.servers import proxy

ROOT = Path(__file__).resolve().parents[1]
CLIP = ROOT.parent / "shared" / "corpus" / "dev" / "utt00_clean.wav"

pytestmark = [pytest.mark.slow]


async def run(*args: str, key: str | None = None) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUPLEX_PROXY")}
    if key is not None:
        env["DUPLEX_PROXY_API_KEY"] = key
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "proxy",
        *args,
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 90)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_the_probe_sends_its_key_and_is_refused_without_one() -> None:
    config = auth_config({"m": "embedded://duplex"}, api_keys())
    async with proxy(config) as base:
        url = base.replace("http://", "ws://") + "/v1/realtime"
        args = ("probe", url, "--model", "m", "--checks", "declared", "--json")
        code, out, err = await run(*args, "--api-key", KEY_A)
        assert code == 0, err
        assert orjson.loads(out)["checks"][0]["verdict"] == "pass"
        # The same key from the environment, as a CI job would pass it.
        code, out, err = await run(*args, key=KEY_A)
        assert code == 0, err
        code, out, _ = await run(*args)
        assert code != 0
        assert "401" in out


async def test_talk_sends_its_key_and_is_refused_without_one(tmp_path: Path) -> None:
    config = auth_config({"m": "embedded://turn"}, api_keys())
    async with proxy(config) as base:
        url = base.replace("http://", "ws://") + "/v1/realtime"
        args = ("talk", url, "--model", "m", "--wav", str(CLIP), "--tail", "1", "--json")
        code, out, err = await run(*args, "--api-key", KEY_A)
        assert code == 0, out + err
        code, out, err = await run(*args)
        assert code != 0
        assert "401" in out + err
