"""What waits behind a response's end not yet saved (``proxy/emulated/held_ends.py``)
is bounded (``[store] held_max_frames``): with the store frozen, a session that talks
on does not hold ever more; past the cap the end and what follows go out, logged and
counted (``over_cap``), and the session talks on.

Real Redis, frozen (SIGSTOP) as the first answer streams: nothing is saved until long
after the second answer.
"""

from __future__ import annotations

import aiohttp
import pytest

from proxy.config import ConfigError, config_from_dict
from tests.redis_server import RedisServer
from tests.resume_client import created, speak, wait_persisted
from tests.servers import connect, proxy_config, reference, replica, ws_url

pytestmark = [pytest.mark.redis, pytest.mark.slow]

STORE_TIMEOUT_S = 20.0  # a frozen store's checkpoint gives up only after this long
# room for one timed-out write and its retry (min_grace_s, proxy/config_store.py)
GRACE_S = 4 * STORE_TIMEOUT_S
CAP = 8
# The client's queue takes every held event at once when the cap lets them go: at
# twice the cap (the least it may be) the release must not drop the client (1008).
QUEUE = 2 * CAP


def test_a_cap_the_client_queue_could_not_take_at_once_is_refused() -> None:
    with pytest.raises(ConfigError, match="held_max_frames"):
        config_from_dict(
            {"server": {"client_send_queue_frames": QUEUE}, "store": {"held_max_frames": QUEUE}}
        )
    with pytest.raises(ConfigError, match="held_max_bytes"):
        config_from_dict({"server": {"client_send_queue_bytes": 1 << 20}})
    config_from_dict(
        {"server": {"client_send_queue_frames": QUEUE}, "store": {"held_max_frames": CAP}}
    )


async def _over_cap(base: str) -> float:
    async with aiohttp.ClientSession() as http, http.get(base + "/metrics") as resp:
        text = await resp.text()
    for line in text.splitlines():
        if line.startswith("duplex_proxy_response_ends_unsaved_total{") and "over_cap" in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def test_past_the_cap_a_held_end_and_what_follows_go_out_unsaved(
    redis_server: RedisServer,
) -> None:
    async with reference("duplex", reply_ms=1000) as up:
        config = proxy_config(
            {"m": up},
            store={
                "url": redis_server.url,
                "timeout_s": STORE_TIMEOUT_S,
                "disconnect_grace_s": GRACE_S,
                "held_max_frames": CAP,
            },
            server={"client_send_queue_frames": QUEUE},
        )
        async with replica(config, "a") as a, connect(ws_url(a)) as c:
            s = await created(c)
            await wait_persisted(redis_server.url, s.sid)
            await speak(c)
            first = await c.until("response.created", timeout=20)
            redis_server.pause()
            try:
                # The first answer's end is held (its checkpoint hangs); the second
                # turn's events pile up behind it until the cap lets them all go.
                await speak(c)
                within = STORE_TIMEOUT_S / 2
                done = await c.until("response.done", timeout=within)
                assert done["response"]["id"] == first["response"]["id"]
                second = await c.until("response.created", timeout=within)
                assert second["response"]["id"] != first["response"]["id"]
                assert await _over_cap(a) >= 1
                # Not dropped as a slow consumer: the session talks on (its next
                # turn's events pile up behind the second end until the cap again).
                await speak(c)
                third = await c.until("response.created", timeout=within)
                assert third["response"]["id"] != second["response"]["id"]
            finally:
                redis_server.resume()
        seqs = [e["server_event_seq"] for e in c.events if "server_event_seq" in e]
        assert seqs == list(range(1, len(seqs) + 1)), "lost or out of order"
