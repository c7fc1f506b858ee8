"""The ``talk`` command when its resume is refused as ``session_resume_unavailable``: it
tries again on a new connection, and the session goes on (docs/protocol.md, "Resume").

``talk`` speaks to replica a; a goes away with the session store frozen (Redis under
SIGSTOP), and replica b takes a's port. ``talk``'s resume reaches b, which cannot load
the session from the store and refuses it as unavailable (worth trying again: the
session is where it was). Once Redis answers, the next try resumes the same session from the store. Before
this, ``talk`` gave up on any refused resume.
"""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest

from proxy.app import build_app
from proxy.state import ProxyState
from tests.ports import free_port
from tests.redis_server import RedisServer
from tests.resume_client import wait_persisted
from tests.servers import CORPUS, ROOT, reference, serve_app, store_config
from tests.talk_command import command, env
from tests.talk_lines import read_until

pytestmark = [pytest.mark.redis, pytest.mark.slow]


@pytest.mark.timeout(120)
async def test_talk_tries_a_resume_the_store_could_not_serve_again(
    redis_server: RedisServer,
) -> None:
    port = free_port()
    url = f"ws://127.0.0.1:{port}/v1/realtime"
    args = ["--model", "m", "--wav", str(CORPUS / "utt00_clean.wav"), "--json"]
    async with reference("turn", reply_ms=3000) as up:
        config = store_config(up, redis_server.url, timeout_s=0.2)
        state_a = ProxyState(config=config, replica_id="a")
        talking = await asyncio.create_subprocess_exec(
            *command("talk", url, *args), cwd=ROOT, env=env(), stdout=subprocess.PIPE
        )
        try:
            assert talking.stdout is not None
            seen: list[str] = []
            async with serve_app(build_app(config, state_a), port):
                await read_until(talking.stdout, "session.created", seen)
                (session_id,) = state_a.live
                await wait_persisted(redis_server.url, session_id)
                redis_server.pause()
            try:
                async with serve_app(
                    build_app(config, ProxyState(config=config, replica_id="b")), port
                ):
                    await read_until(talking.stdout, "session_resume_unavailable", seen)
                    redis_server.resume()
                    out, _ = await asyncio.wait_for(talking.communicate(), 60)
            finally:
                redis_server.resume()
        finally:
            if talking.returncode is None:
                talking.kill()
    report = "".join(seen) + out.decode()
    summary = json.loads(out.decode().strip().splitlines()[-1])
    assert summary["session_id"] == session_id, report
    assert summary["resumes"] and summary["resumes"][-1]["ok"], report
    assert (summary["lost"], summary["duplicated"]) == (0, 0), report
    codes = {e.get("code") for e in summary["errors"]}
    assert codes == {"session_resume_unavailable"}, report
