"""What a resume-bench session records: each answer as the client got it, and the
session's outcome (drops, resumes, events checked, marks applied; ``bench/resume.py``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Answer:
    """One response as the client got it: its audio (each delta once, by seq) and whether
    the session moved while it streamed."""

    response_id: str
    turn: int
    item_id: str = ""
    audio: bytearray = field(default_factory=bytearray)
    status: str | None = None
    truncated: int = 0
    moves: int = 0  # drops while it streamed (created, not yet done)
    moves_other: int = 0
    seams: list[int] = field(default_factory=list)  # samples it had at each drop


@dataclass
class Outcome:
    kind: str
    turns: int = 0
    disconnects: int = 0
    resumes: int = 0
    resumes_other: int = 0
    aborts: int = 0  # drops that aborted the TCP connection (no close frame)
    resumes_after_abort: int = 0
    resumes_retried: int = 0  # refused as unavailable right now, and tried again
    resumes_token_given: int = 0  # ... refused during the token's rotation
    resume_ms: list[float] = field(default_factory=list)
    resume_ms_other: list[float] = field(default_factory=list)
    slow: list[dict[str, Any]] = field(default_factory=list)
    events: int = 0
    audio_deltas: int = 0
    lost: int = 0
    duplicated: int = 0
    out_of_order: int = 0
    conflicting: int = 0
    updates_sent: int = 0
    updates_resent: int = 0
    applied: Counter[str] = field(default_factory=Counter)
    error: str | None = None
    clip: str = ""
    answers: list[Answer] = field(default_factory=list)
    overlaps: list[dict[str, Any]] = field(default_factory=list)
