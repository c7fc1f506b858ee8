"""The ``talk`` command when its resume is refused as ``session_resume_unavailable`` or
as ``upstream_unavailable``: it tries again on a new connection, and the session goes
on (docs/protocol.md, "Resume": both leave the session where it was).

``talk`` speaks to replica a over ``duplex_emulated``; a goes away and replica b takes
a's port, either with the session store frozen (Redis under SIGSTOP: b cannot load the
session, ``session_resume_unavailable``) or with its way to the upstream cut (a TCP
relay pointed at a closed port: b cannot open the session's upstream,
``upstream_unavailable``). ``talk`` names its model, so b then opens a new session on
that socket; ``talk`` leaves it. Once Redis answers or the relay points at the upstream
again, the next try resumes the same session from the store. Before, ``talk`` gave up
on the first refusal, and later took the second for the end of its resume and carried
on in the new session.
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

pytestmark = [pytest.mark.redis, pytest.mark.slow]


async def read_until(stream: asyncio.StreamReader, text: str, seen: list[str]) -> None:
    """``talk``'s lines into ``seen`` until one says ``text``."""
    async with asyncio.timeout(30):
        while not seen or text not in seen[-1]:
            line = (await stream.readline()).decode()
            assert line, f"talk ended before {text}:\n" + "".join(seen)
            seen.append(line)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("fault", "code"),
    [("store", "session_resume_unavailable"), ("upstream", "upstream_unavailable")],
)
async def test_talk_tries_a_resume_refused_for_now_again(
    redis_server: RedisServer, fault: str, code: str
) -> None:
    port = free_port()
    url = f"ws://127.0.0.1:{port}/v1/realtime"
    args = ["--model", "m", "--wav", str(CORPUS / "utt00_clean.wav"), "--json"]
    async with reference("turn", reply_ms=3000) as up, tcp_link(up) as link:
        config = store_config(link.url(up), redis_server.url, timeout_s=0.2)
        target = link.target
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
                if fault == "store":
                    redis_server.pause()
                else:
                    link.target = ("127.0.0.1", closed_port())
            try:
                async with serve_app(
                    build_app(config, ProxyState(config=config, replica_id="b")), port
                ):
                    await read_until(talking.stdout, code, seen)
                    redis_server.resume()
                    link.target = target
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
    assert codes == {code}, report
