"""Refused resumes (``docs/protocol.md``, "Resume"): a wrong token, an unknown session and
a malformed one each get their error code, by event or upgrade query, leak nothing
about the session, start the connection fresh, and leave the session resumable.
"""

from __future__ import annotations

import secrets

import pytest

from tests.resume_client import Tracked, created, error_code, resumed, send_resume, store_url
from tests.servers import connect, reference, replica, store_config, ws_url

__all__ = ["store_url"]  # fixtures, used by name


@pytest.mark.parametrize("via", ["event", "query"])
async def test_refused_resumes_say_why_and_the_connection_starts_fresh(
    store_url: str, via: str
) -> None:
    async with (
        reference("turn", reply_ms=500) as up,
        replica(store_config(up, store_url), "a") as a,
    ):
        async with connect(ws_url(a)) as c0:
            s = await created(c0)
        cases = [
            (Tracked(s.sid, "not-the-token"), "session_resume_denied"),
            (Tracked("sess_" + secrets.token_hex(16), s.token), "session_resume_expired"),
            (Tracked("s" * 200, s.token), "invalid_session_resume"),
        ]
        for attempt, code in cases:
            if via == "event":
                async with connect(ws_url(a)) as c:
                    ev = await send_resume(c, attempt)
                    assert error_code(ev) == code
                    fresh = await c.until("session.created")
            else:
                query = {
                    "session_id": attempt.sid,
                    "resume_token": attempt.token,
                    "last_received_server_event_seq": "0",
                }
                async with connect(ws_url(a, **query)) as c:
                    ev = await c.recv()
                    assert error_code(ev) == code
                    fresh = await c.until("session.created")
            # Nothing about the session leaks, and the client starts over.
            assert set(ev["error"]) <= {"type", "code", "message", "event_id", "param"}
            assert s.sid not in ev["error"]["message"]
            assert fresh["session"]["id"] not in (s.sid, attempt.sid)
        # Failed attempts did not disturb the session.
        async with connect(ws_url(a)) as c:
            await resumed(c, s)
