"""A resume while the upstream cannot be reached (``proxy/resume/reach.py``, or a
fresh upstream session that cannot open before the lease moves,
``proxy/resume/upstream_reopen.py``): the client is told ``upstream_unavailable``, a
connection that came only to resume is closed 1013 (try again later, docs/protocol.md),
the session stays where it was, and a resume once the upstream is back gets every
event exactly once. Real Redis, two replicas, the reference backend behind a TCP relay
that can point at a closed port.
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
from tests.servers import (
    closed,
    connect,
    reference,
    replica,
    store_config,
    tcp_link,
    ws_url,
)

pytestmark = [pytest.mark.redis]

__all__ = ["redis_url"]  # fixtures, used by name

# (backend kind, client query, the mode the session runs in, whether the store keeps
# the upstream's resume token: without it an emulated session's upstream session is
# replaced by a fresh one, opened before the lease moves)
CASES = [
    ("duplex", {"duplex": "1"}, "passthrough", True),
    ("duplex", {}, "barge_in_emulated", True),
    ("duplex", {}, "barge_in_emulated", False),
    ("turn", {}, "duplex_emulated", True),
]
IDS = [f"{c[2]}{'' if c[3] else '_fresh'}" for c in CASES]


@pytest.mark.parametrize(("kind", "query", "mode", "keyed"), CASES, ids=IDS)
async def test_a_resume_while_the_upstream_is_unreachable_fails_and_leaves_the_session(
    redis_url: str, kind: str, query: dict[str, str], mode: str, keyed: bool
) -> None:
    # With the key the store keeps the upstream's own resume token (sealed): an
    # emulated session's upstream session is resumed, not replaced by a fresh one.
    keys = {"secret_key": base64.b64encode(secrets.token_bytes(32)).decode()} if keyed else {}
    async with reference(kind, reply_ms=500) as up, tcp_link(up) as link:
        config = store_config(link.url(up), redis_url, **keys)
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
            # A connection that came only to resume: told to try again later.
            async with connect(ws_url(b, model=None, **query)) as c2:
                ev = await send_resume(c2, s)
                assert error_code(ev) == "upstream_unavailable", ev
                assert await closed(c2) == 1013, "the session is where it was: try again"
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
