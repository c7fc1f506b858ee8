"""All live duplex sessions of one backend, and the refusal a resume can end in.

A session stays registered from its open until it ends -- through a
disconnect grace too -- which is what ``max_sessions`` counts (as vLLM-Omni
counts them; ``docs/fidelity.md``, row 8). The registry knows its sessions only as
``RegisteredSession``; the session module uses the registry, not the reverse.
"""

from __future__ import annotations

import hashlib
from typing import Generic, Protocol, TypeVar

from proxy.reference.gate import AudioGate


class ClosableModel(Protocol):
    async def aclose(self) -> None: ...


class RegisteredSession(Protocol):
    """What the registry needs of a session."""

    id: str

    @property
    def model(self) -> ClosableModel: ...

    def end(self) -> None: ...


S = TypeVar("S", bound=RegisteredSession)


class ResumeRefused(Exception):
    """A resume that cannot proceed; ``payload`` is the one frame the client gets."""

    def __init__(self, payload: dict[str, object]) -> None:
        super().__init__(str(payload.get("type")))
        self.payload = payload


def token_digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


class SessionRegistry(Generic[S]):
    """All live duplex sessions of one backend, plus the audio gate they share."""

    def __init__(self, gate: AudioGate) -> None:
        self.sessions: dict[str, S] = {}
        self.gate = gate

    def add(self, session: S) -> None:
        self.sessions[session.id] = session
        self.gate.join(session)

    def remove(self, session: S) -> None:
        self.sessions.pop(session.id, None)
        self.gate.leave(session)

    def get(self, session_id: str) -> S | None:
        return self.sessions.get(session_id)

    async def aclose(self) -> None:
        for session in list(self.sessions.values()):
            session.end()
            await session.model.aclose()
