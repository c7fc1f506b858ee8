"""A ``session.resume`` request (first event, or the upgrade URL's query) and the
``error`` codes a failed resume answers with (docs/protocol.md).

Failures say nothing about the session; the client may then start fresh.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import orjson

from proxy.store.ids import valid_session_id

# Seqs are JSON numbers: past 2^53 a client could not even hold them exactly.
MAX_SEQ = 2**53
# A resume token is a short random string; anything far longer is not one.
MAX_TOKEN_LEN = 512


@dataclass(frozen=True, slots=True)
class ResumeRequest:
    session_id: str
    resume_token: str
    last_seq: int
    raw: str
    at: float = field(default_factory=time.monotonic)  # when it arrived

    def took_ms(self) -> float:
        return round((time.monotonic() - self.at) * 1000, 1)


class ResumeFailed(Exception):
    """``code`` and ``message`` for the client's ``error``; ``resume_token``, where the
    store may hold a new token the client was never told (``unavailable``); ``retry``:
    the session is where it was, and the same resume may succeed later."""

    def __init__(
        self,
        code: str,
        message: str,
        resume_token: str | None = None,
        retry: bool = False,
        native_code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.resume_token = resume_token
        self.retry = retry or code == "session_resume_unavailable"
        # vLLM-Omni's own code for it, where it has another: what a native client gets
        # (proxy/resume/native_answer.py).
        self.native_code = native_code

    def close(self) -> tuple[int, str]:
        """The close code and reason for a connection that only came to resume: 1013
        (try again later) while the store or the upstream cannot answer, 1008 (policy)
        otherwise."""
        if self.retry:
            return 1013, "resume unavailable: try again"
        return 1008, "resume failed"


def expired() -> ResumeFailed:
    return ResumeFailed(
        "session_resume_expired", "no resumable session with that id (unknown or expired)"
    )


def denied() -> ResumeFailed:
    return ResumeFailed(
        "session_resume_denied",
        "the resume token does not match",
        native_code="invalid_resume_token",
    )


def gap() -> ResumeFailed:
    return ResumeFailed(
        "session_resume_gap",
        "events after that server_event_seq are no longer kept; start a new session",
    )


def conflict() -> ResumeFailed:
    return ResumeFailed("session_resume_conflict", "another connection resumed this session")


def shutting_down() -> ResumeFailed:
    return ResumeFailed("server_shutting_down", "this replica is draining; resume elsewhere")


def unavailable(token: str | None = None) -> ResumeFailed:
    """The store is down or did not answer in time: the session is not lost, try again.

    With ``token``: the store stopped answering while the resume token was rotated to
    it, so the store holds either it or the client's previous one; the client is given
    both to try (docs/protocol.md, "Resume")."""
    if token is None:
        return ResumeFailed(
            "session_resume_unavailable",
            "resume is unavailable right now: the session store is down or did not "
            "answer in time; try again",
        )
    return ResumeFailed(
        "session_resume_unavailable",
        "the session store did not answer while the resume token was rotated; try "
        "again with this resume_token, and with the previous one if it is denied",
        resume_token=token,
    )


def upstream_unavailable(message: str) -> ResumeFailed:
    """The upstream could not be reached, or did not answer the resume: the session
    stays where it was, so the same resume may succeed once the upstream is back (a
    passthrough upstream that rotated its token unanswered denies it then)."""
    return ResumeFailed("upstream_unavailable", message, retry=True)


def rotating() -> ResumeFailed:
    """A passthrough session's token is being rotated: its hash may not be stored yet."""
    return ResumeFailed(
        "session_resume_unavailable",
        "the session's resume token is being rotated and the session store does not "
        "hold the new one yet; try again",
    )


def parse_resume(event: dict[str, Any], raw: str) -> ResumeRequest:
    sid, token = event.get("session_id"), event.get("resume_token")
    seq = event.get("last_received_server_event_seq", 0)
    if (
        not isinstance(sid, str)
        or not valid_session_id(sid)
        or not isinstance(token, str)
        or not 0 < len(token) <= MAX_TOKEN_LEN
        or isinstance(seq, bool)
        or not isinstance(seq, int)
        or not 0 <= seq <= MAX_SEQ
    ):
        raise ResumeFailed(
            "invalid_session_resume",
            "session.resume needs session_id, resume_token and an integer "
            "last_received_server_event_seq from 0 to 2^53",
        )
    return ResumeRequest(sid, token, seq, raw)


def resume_from_query(query: Any) -> tuple[dict[str, Any], str] | None:
    """The URL's resume as a ``session.resume`` event; ``parse_resume`` validates it."""
    if "session_id" not in query or "resume_token" not in query:
        return None
    seq_raw = query.get("last_received_server_event_seq", "0")
    # ASCII digits only (``str.isdigit`` also accepts "²", which ``int`` refuses), and
    # few enough that ``int`` never meets its digit limit: anything else is refused.
    seq_ok = seq_raw.isascii() and seq_raw.isdigit() and len(seq_raw) <= len(str(MAX_SEQ))
    event = {
        "type": "session.resume",
        "session_id": query["session_id"],
        "resume_token": query["resume_token"],
        "last_received_server_event_seq": int(seq_raw) if seq_ok else None,
    }
    return event, orjson.dumps(event).decode()
