"""A response's end held until the store has it (``proxy/emulated/held_ends.py``)
reaches the client when the proxy itself closes the session (idle, too long), and
before the closing error; a drained client (1012) gets it once the store has it,
and its resume elsewhere does not end the response again.

Real Redis, frozen (SIGSTOP) as the response streams: its end is held behind a
checkpoint that does not come when the proxy's own close is due. The drain runs in
``python -m proxy serve`` replicas (a signal starts it).
"""

from __future__ import annotations

import asyncio
import signal
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from proxy.reference.options import ReferenceOptions
from tests.held_turn_replicas import slow_replicas
from tests.redis_server import RedisServer
from tests.resume_client import created, resumed, speak, wait_persisted
from tests.servers import Client, closed, connect, proxy_config, reference, replica, ws_url

pytestmark = [pytest.mark.redis, pytest.mark.slow]

# A frozen store answers nothing: a checkpoint gives up only after this long, well
# after the proxy's own close is due.
STORE_TIMEOUT_S = 15.0
# room for one timed-out write and its retry (min_grace_s, proxy/config_store.py)
GRACE_S = 4 * STORE_TIMEOUT_S


@pytest.mark.parametrize(
    ("limits", "close_error"),
    [
        ({"idle_timeout_s": 7.0, "idle_warning_s": 0.0}, None),
        ({"max_session_s": 7.0}, "session_expired"),
    ],
    ids=["idle", "expired"],
)
async def test_a_held_end_goes_out_before_the_proxy_closes_the_session(
    redis_server: RedisServer, limits: dict[str, Any], close_error: str | None
) -> None:
    async with (
        reference("duplex", reply_ms=1000) as up,
        replica(
            proxy_config(
                {"m": up},
                store={
                    "url": redis_server.url,
                    "timeout_s": STORE_TIMEOUT_S,
                    "disconnect_grace_s": GRACE_S,
                },
                server=limits,
            ),
            "a",
        ) as a,
    ):
        async with connect(ws_url(a)) as c:
            s = await created(c)
            await wait_persisted(redis_server.url, s.sid)
            await speak(c)
            opened = await c.until("response.created", timeout=20)
            redis_server.pause()
            try:
                code = await closed(c, within_s=STORE_TIMEOUT_S - 2)
            finally:
                redis_server.resume()
        kinds = [e["type"] for e in c.events]
        dones = [e for e in c.events if e["type"] == "response.done"]
        assert [d["response"]["id"] for d in dones] == [opened["response"]["id"]], kinds
        assert code == 1000
        if close_error is not None:
            errors = [e["error"]["code"] for e in c.events if e["type"] == "error"]
            assert errors[-1:] == [close_error], kinds
            assert kinds.index("response.done") < len(kinds) - 1 - kinds[::-1].index("error")


async def _until_quiet(c: Client, quiet_s: float) -> None:
    """Read until nothing came for ``quiet_s``, after the answer's audio began."""
    await c.until("response.output_audio.delta", timeout=20)
    while True:
        try:
            await c.recv(timeout=quiet_s)
        except TimeoutError:
            return


async def test_a_drained_client_gets_the_held_end_once_saved_then_resumes_without_it_again(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """A drain (1012, resume elsewhere) lets a held end go once the store has it,
    before the close; the resume elsewhere does not end the response again."""
    async with AsyncExitStack() as stack:
        up = await stack.enter_async_context(
            reference("duplex", reply_ms=1000, options=ReferenceOptions(max_sessions=4))
        )
        a, b = await slow_replicas(
            stack,
            tmp_path,
            redis_server.url,
            up,
            store=f"timeout_s = {STORE_TIMEOUT_S}\ndisconnect_grace_s = {GRACE_S}\n",
        )
        async with connect(ws_url(a.base)) as c1:
            s = await created(c1)
            await wait_persisted(redis_server.url, s.sid)
            await speak(c1)
            opened = await c1.until("response.created", timeout=20)
            redis_server.pause()
            try:
                await _until_quiet(c1, quiet_s=1.0)  # its audio is out; its end is held
                assert not c1.of("response.done"), "held: the store is frozen"
                a.proc.send_signal(signal.SIGINT)  # drain at once
                await asyncio.sleep(1.0)  # (the drain waits on the store meanwhile)
            finally:
                redis_server.resume()
            code = await closed(c1, within_s=STORE_TIMEOUT_S)
            s.take(c1)
        assert code == 1012, a.output()
        rid = opened["response"]["id"]
        assert [d["response"]["id"] for d in c1.of("response.done")] == [rid]
        async with connect(ws_url(b.base)) as c2:
            await resumed(c2, s)
            await speak(c2)
            while (await c2.until("response.done", timeout=30))["response"]["id"] == rid:
                pass
            s.take(c2)
        ends = [e["response"]["id"] for e in s.events if e["type"] == "response.done"]
        assert ends.count(rid) == 1, f"the response ended twice: {ends}"
        s.assert_exactly_once()
