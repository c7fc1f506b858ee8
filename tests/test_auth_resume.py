"""A session belongs to the key that opened it, and no key, token or audio is ever logged.

Resume by another key is denied on the replica that holds the session and, through a
real Redis, on another replica. The log test runs ``duplex-proxy serve`` as a process
at debug level and reads every line it wrote during a spoken session and two resumes.
"""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from tests.auth_helpers import KEY_A, KEY_B, api_keys, auth_config, bearer, connect_with
from tests.auth_helpers import key_subprotocols as subprotocols
from tests.ports import free_port
from tests.redis_server import RedisServer
from tests.resume_client import load_record
from tests.servers import ROOT, Client, load_clip, proxy, silence, ws_url

ROUTES = {"a-demo": "embedded://turn", "b-demo": "embedded://turn"}
CLIP = "utt05_clean.wav"


async def resume(c: Client, sid: str, token: str, last: int = 0) -> dict[str, object]:
    await c.send(
        {
            "type": "session.resume",
            "session_id": sid,
            "resume_token": token,
            "last_received_server_event_seq": last,
        }
    )
    return await c.recv()


async def open_session(url: str) -> tuple[str, str]:
    async with connect_with(url, headers=bearer(KEY_A)) as c:
        created = await c.until("session.created")
    return created["session"]["id"], created["resume_token"]


async def test_resume_by_another_key_is_denied_on_the_same_replica() -> None:
    config = auth_config(ROUTES, api_keys(), store={"url": "memory://"})
    async with proxy(config) as base:
        sid, token = await open_session(ws_url(base, model="a-demo"))
        async with connect_with(ws_url(base, model=None), headers=bearer(KEY_B)) as thief:
            answer = await resume(thief, sid, token)
            assert answer["type"] == "error"
            assert answer["error"]["code"] == "session_resume_denied"  # type: ignore[index]
        async with connect_with(ws_url(base, model=None), headers=bearer(KEY_A)) as owner:
            answer = await resume(owner, sid, token)
            assert answer["type"] == "session.resumed", answer


@pytest.mark.redis
async def test_resume_by_another_key_is_denied_on_another_replica(
    redis_server_session: RedisServer,
) -> None:
    url = redis_server_session.url
    config = auth_config(ROUTES, api_keys(), store={"url": url})
    async with proxy(config) as a, proxy(config) as b:
        sid, token = await open_session(ws_url(a, model="a-demo"))
        record = await load_record(url, sid)
        assert record is not None and record.key_id == "team-a"
        async with connect_with(ws_url(b, model=None), headers=bearer(KEY_B)) as thief:
            answer = await resume(thief, sid, token)
            assert answer["error"]["code"] == "session_resume_denied"  # type: ignore[index]
        async with connect_with(ws_url(b, model=None), headers=bearer(KEY_A)) as owner:
            answer = await resume(owner, sid, token)
            assert answer["type"] == "session.resumed", answer


@pytest.fixture
def logged_proxy(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``duplex-proxy serve`` at debug level with API keys; yields its base URL and log."""
    keys = api_keys()["keys"]
    lines = [f'{{ id = "{k["id"]}", sha256 = "{k["sha256"]}" }}' for k in keys]
    config = tmp_path / "proxy.toml"
    config.write_text(
        '[server]\nhost = "127.0.0.1"\nlog_level = "debug"\n'
        f'[auth]\nmode = "api_key"\nkeys = [{", ".join(lines)}]\n'
        "[web]\nenabled = true\n"
        '[[routes]]\nmodel = "a-demo"\nupstream = "embedded://turn"\n'
    )
    port = free_port()
    log = tmp_path / "proxy.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUPLEX_PROXY__")}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "proxy", "serve", "--config", str(config), "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
        )
    try:
        deadline = time.monotonic() + 60
        while '"listening"' not in log.read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"serve did not start: {log.read_text()}")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}", log
    finally:
        proc.terminate()
        proc.wait(timeout=20)


async def test_logs_hold_no_key_token_or_audio(logged_proxy: tuple[str, Path]) -> None:
    base, log = logged_proxy
    url = ws_url(base, model="a-demo")
    speech = load_clip(CLIP)[: 24000 * 2 * 2] + silence(1200)
    tokens: list[str] = []
    async with connect_with(url, protocols=subprotocols(KEY_A)) as c:
        created = await c.until("session.created")
        sid = created["session"]["id"]
        tokens.append(created["resume_token"])
        await c.stream(speech, realtime=False)
        await c.until("response.output_audio.delta", timeout=30)
    async with connect_with(ws_url(base, model=None), headers=bearer(KEY_A)) as c:
        resumed = await resume(c, sid, tokens[-1])
        assert resumed["type"] == "session.resumed", resumed
        tokens.append(str(resumed["resume_token"]))
        await c.until("response.done", timeout=30)
    # A resume through the upgrade query: the token sits in the request line.
    query = {"session_id": sid, "resume_token": tokens[-1]}
    async with connect_with(ws_url(base, model=None, **query), headers=bearer(KEY_A)) as c:
        resumed = await c.recv()
        assert resumed["type"] == "session.resumed", resumed
        tokens.append(str(resumed["resume_token"]))
    with pytest.raises(aiohttp.WSServerHandshakeError):
        async with connect_with(url, headers=bearer("dpk_wrong-" + "w" * 30)):
            pass
    await asyncio.sleep(0.3)  # the last lines reach the file
    text = log.read_text()
    assert '"key_id": "team-a"' in text, "sessions are attributed to their key id"
    assert "session_resumed" in text and "auth_refused" in text
    secrets = [KEY_A, "dpk_wrong-", *tokens]
    # Base64 of the microphone audio as sent, and of the assistant audio received.
    sent = base64.b64encode(speech[48000:52800]).decode()[:40]
    deltas = [e["delta"][:40] for e in c.events if e.get("type") == "response.output_audio.delta"]
    for secret in (*secrets, sent, *deltas):
        assert secret not in text, f"{secret[:12]}... is in the log"
