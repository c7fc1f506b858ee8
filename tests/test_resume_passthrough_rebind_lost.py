"""A passthrough rebind that never lands: what the client holding the new token is
told (docs/fidelity.md, "Known gaps"; ``proxy/passthrough/rebind.py``).

A replica relayed a resume, the upstream rotated the token, and the store would not
take the new token's hash within ``[store] rebind_wait_s``: the client was told the
new token, and the write went on in the background. If that write never lands (the
replica died, or the store refused it until ``disconnect_grace_s`` after the client
left that replica; the store and the other replicas cannot tell the two apart), the
store keeps the old hash, which the upstream no longer takes, and the client holds a
token the store does not know. The proxy cannot tell that token from a guess, and never lets a token
through unmatched: the session is lost through the proxy. What this pins down: the
client is told to try again (``session_resume_unavailable``) while the resume's mark
stands, then that the session expired; never denied, never let in, on any replica;
and the upstream would still have resumed it with that token.

Real parts on loopback: replicas "a" and "b" sharing a redis-server, the duplex
reference backend, replica "a"'s store refusing its rebind writes (as in
tests/test_resume_passthrough_rebind.py).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.passthrough_resume_stack import (
    Fault,
    opened,
    refused,
    replicas_before,
    resume,
)
from tests.redis_server import RedisServer
from tests.servers import connect, reference, ws_url

pytestmark = [pytest.mark.redis]

GRACE_S = 4.0  # the store's disconnect_grace_s: how long an unwritten record lives


async def told_until_it_ends(base: str, sid: str, token: str) -> list[str]:
    """The codes a client retrying its resume is told (every 0.1 s) until it is told
    anything but to try again (within 20 s)."""
    codes: list[str] = []
    async with asyncio.timeout(20):
        while not codes or codes[-1] == "session_resume_unavailable":
            code, close = await refused(base, sid, token)
            codes.append(code)
            if code == "session_resume_unavailable":
                assert close == 1013
                await asyncio.sleep(0.1)
    return codes


async def test_a_token_whose_hash_never_lands_is_refused_until_the_session_expires(
    redis_server_session: RedisServer,
) -> None:
    url = redis_server_session.url
    async with (
        reference("duplex") as up,
        replicas_before(up, url, disconnect_grace_s=GRACE_S, rebind_wait_s=0.2) as group,
    ):
        (a, state), (b, _) = group
        assert state.store is not None
        sid, first = await opened(a)
        Fault(state.store, applied=False)  # "a" never gets its rebind written
        async with connect(ws_url(a, model=None)) as c:
            answer = await resume(c, sid, first)
            assert answer["type"] == "session.resumed", answer
            token = answer["resume_token"]
        # The client, its connection to "a" gone, resumes on "b" with the token it holds.
        codes = await told_until_it_ends(b, sid, token)
        assert codes[0] == "session_resume_unavailable", codes
        assert codes[-1] == "session_resume_expired", codes
        assert set(codes) == {"session_resume_unavailable", "session_resume_expired"}
        # The token the upstream rotated away from is no better.
        assert (await refused(b, sid, first))[0] == "session_resume_expired"
        # The upstream would have resumed it: the session was lost in the proxy.
        async with connect(up + "?duplex=1&autostart=0") as direct:
            resumed: dict[str, Any] = await resume(direct, sid, token)
            assert resumed["type"] == "session.resumed", resumed
