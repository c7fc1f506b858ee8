"""A response's end held until the store has it (``proxy/emulated/held_ends.py``)
reaches the client when the proxy itself closes the session (idle, too long), and
before the closing error: the close does not drop it.

Real Redis, frozen (SIGSTOP) as the response streams: its end is held behind a
checkpoint that does not come when the proxy's own close is due.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.redis_server import RedisServer
from tests.servers import closed, connect, proxy_config, reference, replica, ws_url
from tests.test_resume import created, speak, wait_persisted

pytestmark = [pytest.mark.redis, pytest.mark.slow]

# A frozen store answers nothing: a checkpoint gives up only after this long, well
# after the proxy's own close is due.
STORE_TIMEOUT_S = 15.0


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
                store={"url": redis_server.url, "timeout_s": STORE_TIMEOUT_S},
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
