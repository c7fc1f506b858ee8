"""What a soak run counts: the faults injected and, per client, what its session saw."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Faults:
    client_cuts: int = 0
    floods: int = 0
    slow_readers: int = 0
    dropped_by_proxy: int = 0
    upstream_kills: int = 0
    redis_restarts: int = 0
    timeline: list[list[Any]] = field(default_factory=list)  # [seconds into the run, what]


@dataclass
class Outcome:
    kind: str
    sessions: int = 0  # sessions opened (a new one after a failed resume)
    turns: int = 0
    stalled_turns: int = 0
    responses: dict[str, int] = field(default_factory=dict)
    resumes: int = 0
    resume_failures: list[str] = field(default_factory=list)
    drops: dict[str, int] = field(default_factory=dict)  # why the proxy ended a connection
    reopen_retries: int = 0
    resume_hangs: int = 0
    hang_at: list[list[Any]] = field(default_factory=list)  # [seconds, replica, session]
    not_resumable: int = 0  # opened while the store was down: no resume token
    events: int = 0
    lost: int = 0
    duplicated: int = 0
    out_of_order: int = 0
    error: str | None = None
