"""The ``talk`` command when its resume is refused as ``upstream_unavailable``: it tries
again on a new connection, and the session goes on (docs/protocol.md, "Resume": the
proxy moved nothing, the session is where it was).

``talk`` speaks to replica a over ``duplex_emulated``; a goes away and replica b takes
a's port, its way to the upstream cut (a TCP relay pointed at a closed port). b cannot
open the session's upstream, refuses the resume as ``upstream_unavailable`` and leaves
the session in the store; ``talk`` names its model, so b then opens a new session on
that socket. ``talk`` leaves it, and once the relay points at the upstream again, its
next try resumes the same session. Before this, ``talk`` took that refusal for the end
of its resume and carried on in the new session.
"""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest

from proxy.app import build_app
from proxy.state import ProxyState
from tests.ports import closed_port, free_port
from tests.redis_server import RedisServer
from tests.resume_client import wait_persisted
from tests.servers import CORPUS, ROOT, reference, serve_app, store_config, tcp_link
from tests.talk_command import command, env
from tests.talk_lines import read_until

pytestmark = [pytest.mark.redis, pytest.mark.slow]


@pytest.mark.timeout(120)
async def test_talk_tries_a_resume_the_upstream_could_not_take_again(
    redis_server: RedisServer,
) -> None:
    port = free_port()
    url = f"ws://127.0.0.1:{port}/v1/realtime"
    args = ["--model", "m", "--wav", str(CORPUS / "utt00_clean.wav"), "--json"]
    async with reference("turn", reply_ms=3000) as up, tcp_link(up) as link:
        config = store_config(link.url(up), redis_server.url)
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
                target, link.target = link.target, ("127.0.0.1", closed_port())
            state_b = ProxyState(config=config, replica_id="b")
            async with serve_app(build_app(config, state_b), port):
                await read_until(talking.stdout, "upstream_unavailable", seen)
                link.target = target
                out, _ = await asyncio.wait_for(talking.communicate(), 60)
        finally:
            if talking.returncode is None:
                talking.kill()
    report = "".join(seen) + out.decode()
    summary = json.loads(out.decode().strip().splitlines()[-1])
    assert summary["session_id"] == session_id, report
    assert summary["resumes"] and summary["resumes"][-1]["ok"], report
    assert (summary["lost"], summary["duplicated"]) == (0, 0), report
    codes = {e.get("code") for e in summary["errors"]}
    assert "upstream_unavailable" in codes, report
    assert codes <= {"upstream_unavailable"}, report
