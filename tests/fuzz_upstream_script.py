"""What the fuzzing upstream (tests/fuzz_upstream.py) is told to play: a ``Script`` of
an opening, ``Send`` steps and an ending, and the duplex ``server_event_seq`` counter
its frames are numbered by.

The openings: a valid ``session.created``, or something else first (an event, garbage,
a binary frame, a close, nothing at all). The endings: stay, close cleanly, or abort
the TCP connection.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

DIALECTS = ("duplex", "duplex-no-barge-in", "turn")
OPENINGS = ("valid", "event_first", "garbage_first", "binary_first", "close_first", "silent")
ENDINGS = ("stay", "close", "abort")
SEQ = '"@SEQ@"'  # placeholder for server_event_seq in a scripted duplex event


class Send:
    """One frame the upstream sends: text (any, valid or not) or binary.

    Duplex dialect: ``seq`` says how the "@SEQ@" placeholder in ``text`` becomes
    server_event_seq: "next" (the next one), "gap" (skip ``k`` first), "repeat" (the
    last one again), "back" (``k`` before the last one). A plain class, not a
    dataclass, so that hypothesis prints a failing example through ``__repr__``
    (short) rather than field by field (a huge delta would be printed whole).
    """

    def __init__(
        self,
        label: str,
        text: str | None = None,
        binary: bytes | None = None,
        seq: str = "next",
        k: int = 0,
    ) -> None:
        self.label, self.text, self.binary, self.seq, self.k = label, text, binary, seq, k

    def render(self, counter: Counter | None) -> str:
        assert self.text is not None
        if counter is None or SEQ not in self.text:
            return self.text
        if self.seq == "gap":
            counter.seq += self.k
        if self.seq in ("next", "gap"):
            counter.seq += 1
            value = counter.seq
        elif self.seq == "repeat":
            value = counter.seq
        else:
            value = max(1, counter.seq - self.k)
        return self.text.replace(SEQ, str(value))

    def __repr__(self) -> str:
        body = self.text if self.text is not None else repr(self.binary)
        if body is not None and len(body) > 200:
            body = body[:200] + f"...({len(body)} chars)"
        return f"Send({self.label}: {body})"


@dataclass(frozen=True)
class Script:
    opening: str = "valid"
    steps: tuple[Send, ...] = ()
    ending: str = "stay"
    # After a close or abort, refuse new connections (HTTP 503) this long: an upstream
    # restarting.
    down_s: float = 0.0


class Counter:
    """The duplex dialect's server_event_seq, strictly increasing per session."""

    def __init__(self) -> None:
        self.seq = 0

    def stamp(self, event: dict[str, Any], sid: str) -> dict[str, Any]:
        self.seq += 1
        return {**event, "event_id": f"event_{uuid.uuid4().hex}", "server_event_seq": self.seq}
