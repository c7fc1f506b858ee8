"""All live duplex sessions of one backend, and the refusal a resume can end in.

A session stays registered from its open until it ends -- through a
disconnect grace too -- which is what ``max_sessions`` counts
(``session/manager.py::_admission_count``).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from proxy.reference.gate import AudioGate

if TYPE_CHECKING:
    from proxy.reference.duplex_session import DuplexSession


class ResumeRefused(Exception):
    """A resume that cannot proceed; ``payload`` is the one frame the client gets."""

    def __init__(self, payload: dict[str, object]) -> None:
        super().__init__(str(payload.get("type")))
        self.payload = payload


def token_digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


class SessionRegistry:
    """All live duplex sessions of one backend, plus the audio gate they share."""

    def __init__(self, gate: AudioGate) -> None:
        self.sessions: dict[str, DuplexSession] = {}
        self.gate = gate

    def add(self, session: DuplexSession) -> None:
        self.sessions[session.id] = session
        self.gate.join(session)

    def remove(self, session: DuplexSession) -> None:
        self.sessions.pop(session.id, None)
        self.gate.leave(session)

    def get(self, session_id: str) -> DuplexSession | None:
        return self.sessions.get(session_id)

    async def aclose(self) -> None:
        for session in list(self.sessions.values()):
            session.end()
            await session.model.aclose()
