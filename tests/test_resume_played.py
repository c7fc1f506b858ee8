"""After a resume on another replica the client goes on with the conversation it has
(``shim/played_snapshot.py``): it truncates the assistant item its playback stopped in,
and retrieves it, as it would have on the first replica. Real Redis, two replicas,
the reference backends."""

from __future__ import annotations

import base64
import secrets

import pytest

from tests.resume_client import answered, created, redis_url, resumed, wait_persisted
from tests.servers import Client, connect, replica_pair, ws_url

pytestmark = [pytest.mark.redis]

__all__ = ["redis_url"]  # fixtures, used by name

# Where the proxy itself answers a truncate (the upstream cannot cut its own answer);
# a duplex upstream's own session resumed (its token stored: a secret key).
KINDS = ["turn", "duplex-no-barge-in"]
KEY = base64.b64encode(secrets.token_bytes(32)).decode()


async def until_type(c: Client, *kinds: str) -> dict:  # type: ignore[type-arg]
    while True:
        ev = await c.recv()
        if ev["type"] in kinds:
            return ev


@pytest.mark.parametrize("kind", KINDS)
async def test_an_item_played_before_the_move_is_truncated_and_retrieved_after_it(
    redis_url: str, kind: str
) -> None:
    async with replica_pair(kind, redis_url, reply_ms=2000, secret_key=KEY) as (a, b):
        async with connect(ws_url(a)) as c1:
            s = await created(c1)
            done = await answered(c1)
            s.take(c1)
            await wait_persisted(redis_url, s.sid, seq=done["server_event_seq"])
        [item] = done["response"]["output"]
        said = item["content"][0]["transcript"]
        async with connect(ws_url(b)) as c2:
            await resumed(c2, s)
            # The client's playback stopped 300 ms into the answer.
            await c2.send(
                {
                    "type": "conversation.item.truncate",
                    "item_id": item["id"],
                    "content_index": 0,
                    "audio_end_ms": 300,
                }
            )
            truncated = await until_type(c2, "conversation.item.truncated", "error")
            assert truncated["type"] == "conversation.item.truncated", truncated
            assert truncated["audio_end_ms"] == 300
            await c2.send({"type": "conversation.item.retrieve", "item_id": item["id"]})
            got = await until_type(c2, "conversation.item.retrieved", "error")
            assert got["type"] == "conversation.item.retrieved", got
            assert got["item"]["status"] == "incomplete"
            heard = got["item"]["content"][0]["transcript"]
            assert heard and len(heard) < len(said) and said.startswith(heard), (heard, said)
            await answered(c2)
            s.take(c2)
        s.assert_exactly_once()
