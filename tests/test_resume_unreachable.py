"""A resume while the upstream cannot be reached (``proxy/resume/reach.py``): the
client is told ``upstream_unavailable``, the session stays where it was, and a
resume once the upstream is back gets every event exactly once. Real Redis, two
replicas, the reference backend behind a TCP relay that can point at a closed port.
"""

from __future__ import annotations

import base64
import secrets

import pytest

from tests.ports import closed_port
from tests.resume_client import (
    Tracked,
    answered,
    created,
    error_code,
    load_record,
    redis_url,
    resumed,
    send_resume,
)
from tests.servers import connect, reference, replica, store_config, tcp_link, ws_url

pytestmark = [pytest.mark.redis]

__all__ = ["redis_url"]  # fixtures, used by name

# (backend kind, client query, the mode the session runs in)
CASES = [
    ("duplex", {"duplex": "1"}, "passthrough"),
    ("duplex", {}, "barge_in_emulated"),
    ("turn", {}, "duplex_emulated"),
]


@pytest.mark.parametrize(("kind", "query", "mode"), CASES, ids=[c[2] for c in CASES])
async def test_a_resume_while_the_upstream_is_unreachable_fails_and_leaves_the_session(
    redis_url: str, kind: str, query: dict[str, str], mode: str
) -> None:
    # With the key the store keeps the upstream's own resume token (sealed): an
    # emulated session's upstream session is resumed, not replaced by a fresh one.
    key = base64.b64encode(secrets.token_bytes(32)).decode()
    async with reference(kind, reply_ms=500) as up, tcp_link(up) as link:
        config = store_config(link.url(up), redis_url, secret_key=key)
        async with replica(config, "a") as a, replica(config, "b") as b:
            async with connect(ws_url(a, **query)) as c1:
                s: Tracked = await created(c1)
                assert (
                    c1.of("session.created")[-1]["session"]["capabilities"]["proxy"]["mode"] == mode
                )
                if mode != "passthrough":
                    await answered(c1)
                s.take(c1)
            record = await load_record(redis_url, s.sid)
            assert record is not None

            target, link.target = link.target, ("127.0.0.1", closed_port())
            async with connect(ws_url(b, **query)) as c2:
                ev = await send_resume(c2, s)
                assert error_code(ev) == "upstream_unavailable", ev
            after = await load_record(redis_url, s.sid)
            assert after is not None
            assert (after.epoch, after.owner, after.token_hash) == (
                record.epoch,
                record.owner,
                record.token_hash,
            ), "the session stays where it was"

            link.target = target
            async with connect(ws_url(b, **query)) as c3:
                await resumed(c3, s)
                if mode != "passthrough":
                    await answered(c3)
                s.take(c3)
            s.assert_exactly_once()
