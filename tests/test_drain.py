"""The drain sequence with real processes, in both stop orders (``deploy/README.md``).

(a) The proxy is stopped first (a routing tier, or a sidecar whose model server's
preStop signals it): /readyz turns 503 at once, sessions old and new are still served
for ``drain.readiness_delay_s``, then clients get 1012 and resume on another replica
sharing Redis.

(b) The model server stops first (what a native sidecar otherwise sees): the route's
readiness check reports the upstream unreachable and /readyz turns 503, the session
gets a coded error, and the proxy still drains and exits cleanly on SIGTERM.
"""

from __future__ import annotations

import contextlib
import signal
from pathlib import Path

import aiohttp
import pytest

from tests.proxy_process import backend_process, proxy_process
from tests.redis_server import RedisServer
from tests.resume_client import created, resumed, speak
from tests.servers import connect, reference, ws_url

pytestmark = [pytest.mark.slow]


def _config(upstream: str, store: str = "memory://", **extra: str) -> str:
    sections = "".join(f"{line}\n" for line in extra.values())
    return (
        f'[auth]\nmode = "none"\n[store]\nurl = "{store}"\n{sections}'
        f'[[routes]]\nmodel = "m"\nupstream = "{upstream}"\n'
        + ('health_path = "/healthz"\n' if "health" in extra else "")
    )


@pytest.mark.redis
async def test_proxy_stopped_first_stays_in_service_for_the_delay_then_hands_over(
    tmp_path: Path, redis_server_session: RedisServer
) -> None:
    redis_url = redis_server_session.url
    # A long delay, cut short by a second SIGTERM once the test has seen what it needs:
    # a slow machine must not end the delay before the turn below completes.
    text = _config("{up}", redis_url, drain="[drain]\nreadiness_delay_s = 120")
    async with reference("turn", reply_ms=1000) as up:
        text = text.replace("{up}", up)
        async with (
            proxy_process(tmp_path, "a", text) as a,
            proxy_process(tmp_path, "b", text) as b,
        ):
            await a.until_readyz(200)
            async with connect(ws_url(a.base)) as c1:
                s = await created(c1)
                a.proc.send_signal(signal.SIGTERM)
                body = await a.until_readyz(503)
                assert body["draining"] is True and body["status"] == "not_ready", body

                # Still in service: the open session talks, a new session is taken.
                await speak(c1)
                done = await c1.until("response.done", timeout=30)
                assert done["response"]["status"] == "completed", done
                async with connect(ws_url(a.base)) as late:
                    await late.send({"type": "session.update", "session": {"type": "realtime"}})
                    assert (await late.until("session.created"))["type"] == "session.created"
                status, _ = await a.readyz()
                assert status == 503
                assert a.proc.returncode is None
                s.take(c1)

                a.proc.send_signal(signal.SIGTERM)  # the second signal ends the delay
                with pytest.raises(ConnectionError):
                    while True:
                        await c1.recv()
                assert c1.ws.close_code == 1012, a.output()
                s.take(c1)
            assert await a.wait_exit(30) == 0, a.output()
            log = a.output()
            assert log.index("drain_started") < log.index("draining") < log.index("stopped")

            async with connect(ws_url(b.base)) as c2:
                await resumed(c2, s)
                await speak(c2)
                again = await c2.until("response.done", timeout=30)
                assert again["response"]["status"] == "completed", again
                s.take(c2)
        s.assert_exactly_once()


async def test_model_server_stopped_first_shows_in_readiness_then_the_proxy_drains(
    tmp_path: Path,
) -> None:
    async with backend_process(tmp_path, "model", "turn") as (model, port):
        text = _config(
            f"ws://127.0.0.1:{port}/v1/realtime",
            checks="[readiness]\ncheck_interval_s = 0.2\ncheck_timeout_s = 2",
            drain="[drain]\nreadiness_delay_s = 0.5",
            health="",
        )
        async with proxy_process(tmp_path, "proxy", text) as p:
            body = await p.until_readyz(200)
            assert body["routes"] == {"m": "ok"}, body
            async with connect(ws_url(p.base)) as c:
                await c.send({"type": "session.update", "session": {"type": "realtime"}})
                await c.until("session.created")

                model.send_signal(signal.SIGTERM)
                await model.wait()
                body = await p.until_readyz(503)
                assert body["routes"] == {"m": "unreachable"}, body
                assert body["status"] == "not_ready" and body["draining"] is False, body

                # The next turn needs the upstream: the client hears why it is gone
                # (and may be closed while it still streams).
                with contextlib.suppress(aiohttp.ClientConnectionResetError):
                    await speak(c)
                err = await c.until("error", timeout=30)
                assert err["error"]["code"] == "upstream_unavailable", err
            p.proc.send_signal(signal.SIGTERM)
            assert await p.wait_exit(30) == 0, p.output()
            assert "stopped" in p.output()
