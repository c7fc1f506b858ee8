"""Which session ids the store accepts."""

from __future__ import annotations

# Session ids reach the store from clients (``session.resume``), so they are bounded
# and must not carry a brace: a Redis Cluster hash tag is the text between the first
# ``{`` and the next ``}``, and a ``}`` at the start of an id would make the tag empty
# and scatter one session's keys over several slots.
MAX_SESSION_ID_LEN = 128


def valid_session_id(session_id: str) -> bool:
    return (
        0 < len(session_id) <= MAX_SESSION_ID_LEN
        and session_id.isascii()
        and session_id.isprintable()
        and not any(c in session_id for c in "{} ")
    )


def check_session_id(session_id: str) -> None:
    """Writes with a malformed id are a programming error (ids are generated here)."""
    if not valid_session_id(session_id):
        raise ValueError(f"invalid session id {session_id[:40]!r}")
