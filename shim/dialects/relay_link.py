"""The upstream's own session, as the relay follows it across sockets.

vLLM-Omni journals a duplex session's events (``server_event_seq``) and can resume
the session on a new socket (``session.resume`` with its token), replaying what
followed a given seq. The relay keeps the session's id, token, the last seq it
handled and the last it acknowledged, so that a lost socket (or a move to another
replica) picks the session up where the client's view of it stands.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from shim.actions import ResumeUpstream

# Resumes of the upstream session in a row, with no new upstream event in between,
# before the proxy gives up on it and opens a fresh one.
MAX_UPSTREAM_RESUMES = 3


class Seq(enum.Enum):
    NEW = "new"  # the next event: handle it
    REPEAT = "repeat"  # a replay of one already handled: drop it
    GAP = "gap"  # one went missing: this upstream session cannot be trusted


class UpstreamLink:
    def __init__(self) -> None:
        self.id: str | None = None
        self.token: str | None = None  # None: it cannot be resumed
        self.seq = 0  # last of its events handled
        self.acked = 0  # last acknowledged to it
        self.replaced = False  # another connection took the session over
        # (upstream seq, audio ms, response generated in full) just before the first
        # event held from the client.
        self.hold_mark: tuple[int, float, bool] | None = None
        self.resumes_in_a_row = 0

    def bind(self, event: Mapping[str, Any]) -> bool:
        """Learn the session from its ``session.created`` / ``session.resumed``; True
        when it is a new upstream session (its events count from the start again)."""
        session = event.get("session")
        sid = event.get("session_id")
        if not isinstance(sid, str) and isinstance(session, dict):
            sid = session.get("id")
        token = event.get("resume_token")
        sid = sid if isinstance(sid, str) else ""  # unnamed: acknowledged, never resumed
        fresh = event.get("type") == "session.created" or sid != self.id
        if fresh:
            self.seq = self.acked = 0
            self.hold_mark = None
        self.id = sid
        self.token = token if isinstance(token, str) and sid else None
        return fresh

    @property
    def resumable(self) -> bool:
        return bool(self.id) and self.token is not None

    def accept(self, seq: int, holding: bool, audio_ms: float, done: bool) -> Seq:
        """Check an event's seq; a new one becomes the last handled."""
        if seq <= self.seq:
            return Seq.REPEAT
        if self.seq and seq != self.seq + 1:
            return Seq.GAP
        if not holding:
            # Were this event held, a move would have the upstream replay from here.
            self.hold_mark = (seq - 1, audio_ms, done)
        self.seq = seq
        self.resumes_in_a_row = 0
        return Seq.NEW

    def durable(self, holding: bool, audio_ms: float) -> tuple[int, float]:
        """The upstream seq (and audio ms) a move goes on from: before any event the
        client has not been sent yet (held during an undecided overlap)."""
        if holding and self.hold_mark is not None:
            return self.hold_mark[0], self.hold_mark[1]
        return self.seq, audio_ms

    def held_open(self, holding: bool) -> bool:
        """Output is held and the response was still being produced when it began to
        be: its end may be among the held events."""
        return holding and self.hold_mark is not None and not self.hold_mark[2]

    def checkpointed(self, session_id: str, seq: int) -> int | None:
        """The seq to acknowledge now that the store holds the session up to ``seq``."""
        seq = min(seq, self.seq)
        if session_id != self.id or seq <= self.acked or self.replaced:
            return None
        self.acked = seq
        return seq

    def try_resume(self) -> ResumeUpstream | None:
        """Ask for the session back on a new socket, unless it failed too often."""
        if not self.resumable or self.resumes_in_a_row >= MAX_UPSTREAM_RESUMES:
            return None
        assert self.id is not None and self.token is not None
        self.resumes_in_a_row += 1
        return ResumeUpstream(self.id, self.token, self.seq)

    def forget(self) -> None:
        """The session is gone: a fresh one replaces it."""
        self.id = self.token = None
        self.resumes_in_a_row = 0
