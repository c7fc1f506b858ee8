"""The session store interface: what a replica must persist so another can resume.

How resume across replicas uses it: docs/architecture.md. Keys expire after
``disconnect_grace_s``; every write is fenced by the owner's lease epoch, so a
replica that lost a session can never overwrite the state of the replica that took
it over.
"""

from __future__ import annotations

import abc
import hashlib
import hmac
from dataclasses import dataclass, field
from typing import Any


class StoreUnavailable(Exception):
    """The store did not answer in time or is down; resume is unavailable meanwhile."""


class LeaseLost(Exception):
    """Another owner holds the session now (fencing epoch moved on)."""


def hash_token(token: str) -> str:
    """Resume tokens are stored only hashed: a leaked store hands out no session."""
    return hashlib.sha256(token.encode()).hexdigest()


def token_matches(token: str, token_hash: str) -> bool:
    return hmac.compare_digest(hash_token(token), token_hash)


@dataclass
class SessionRecord:
    """Everything a replica needs to resume a session, apart from the replay log."""

    session_id: str
    token_hash: str
    model: str
    mode: str
    epoch: int = 0
    owner: str = ""
    acked_seq: int = 0
    last_seq: int = 0
    # The shim's durable state: client config, conversation and playback ledger.
    state: dict[str, Any] = field(default_factory=dict)
    # Big parts of that state which change rarely, kept apart so that a write of
    # ``state`` as events stream stays small: the settings (instructions...) and the
    # conversation so far.
    static: dict[str, Any] = field(default_factory=dict)
    conversation: dict[str, Any] = field(default_factory=dict)
    # Upstream binding: url, upstream session id and resume token where it has them.
    upstream: dict[str, Any] = field(default_factory=dict)
    recent_event_ids: list[str] = field(default_factory=list)
    # The API key (or token subject) that opened it: only it may resume (proxy/auth/).
    key_id: str = ""
    # Passthrough: until when (wall clock, ms) a resume relayed to the upstream may
    # still bind the token it rotated to; 0 once bound (proxy/passthrough/rebind.py).
    # The latest of ``rebind_marks``: each resume relayed at this epoch and not
    # answered yet, by its own mark's id (``SessionStore.rebind_mark``).
    rebind_until_ms: int = 0
    rebind_marks: dict[str, int] = field(default_factory=dict)


class SessionStore(abc.ABC):
    @abc.abstractmethod
    async def healthy(self) -> bool: ...

    @abc.abstractmethod
    async def close(self) -> None: ...

    @abc.abstractmethod
    async def create(self, record: SessionRecord) -> None:
        """Store a new session owned by ``record.owner`` at ``record.epoch``."""

    @abc.abstractmethod
    async def load(self, session_id: str) -> SessionRecord | None: ...

    @abc.abstractmethod
    async def take_over(self, session_id: str, owner: str, expected_epoch: int) -> int:
        """Bump the epoch if it is still ``expected_epoch``; return the new epoch.

        Raises LeaseLost when someone else moved it first: exactly one resume wins.
        """

    @abc.abstractmethod
    async def rebind(self, session_id: str, owner: str, old_hash: str, new_hash: str) -> int:
        """Move the lease to ``owner`` (the epoch bumped) and the token hash from
        ``old_hash`` to ``new_hash``, every rebind mark cleared, in one write;
        return the epoch.

        Idempotent: a hash already ``new_hash`` is this call's own write answered late
        (only its caller knows that token), and the epoch is returned as it stands.
        LeaseLost where the hash is neither (another resume rotated it) or the session
        is gone.
        """

    @abc.abstractmethod
    async def rebind_mark(
        self, session_id: str, epoch: int, mark: str, until_ms: int, now_ms: int
    ) -> int:
        """Set the pending rebind ``mark`` to hold until ``until_ms``, or take it away
        (``until_ms`` 0), if ``epoch`` is still current (else LeaseLost); return the
        ``rebind_until_ms`` it leaves: the latest mark not past ``now_ms`` (wall clock),
        0 if none. The other marks (other resumes relayed meanwhile) stay as they are;
        ``rebind`` clears them all.
        """

    @abc.abstractmethod
    async def save(self, record: SessionRecord) -> None:
        """Write the record if its epoch is still current (else LeaseLost)."""

    @abc.abstractmethod
    async def update(self, session_id: str, epoch: int, fields: dict[str, Any]) -> None:
        """Write only these record fields if ``epoch`` is still current (else LeaseLost).

        Never ``epoch``, ``owner`` or the seqs (the lease and the log move those).
        """

    @abc.abstractmethod
    async def add_event_ids(self, session_id: str, epoch: int, ids: list[str]) -> None:
        """Append applied client event ids (the newest ``recent_event_ids`` are kept),
        if ``epoch`` is still current (else LeaseLost)."""

    @abc.abstractmethod
    async def append_events(
        self, session_id: str, epoch: int, events: list[tuple[int, str]], acked_seq: int
    ) -> None:
        """Append (seq, text) server events to the replay log and trim what is acked."""

    @abc.abstractmethod
    async def events_after(self, session_id: str, seq: int) -> list[tuple[int, str]] | None:
        """Logged events after ``seq``; None if the log no longer reaches back that far."""

    @abc.abstractmethod
    async def delete(self, session_id: str, epoch: int) -> None: ...


# What ``update`` may never write: the fence, the lease holder and the log's seqs.
NOT_UPDATABLE = frozenset({"session_id", "epoch", "owner", "acked_seq", "last_seq"})


def check_update(fields: dict[str, Any]) -> None:
    bad = NOT_UPDATABLE.intersection(fields) | (fields.keys() - SessionRecord.__annotations__)
    if bad:
        raise ValueError(f"update cannot write {sorted(bad)}")
