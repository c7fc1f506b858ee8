"""Resume-bench clients that speak over a streaming answer and drop around it.

Each turn: the session's own speech clip, then (a microphone goes on: silence in real
time) the answer's first audio, then a barge-in (another speech clip of the dev corpus)
or a backchannel (one of its backchannel clips) over it. Most turns the connection
drops at a random point from just before the overlap's onset to 1.5 s after it (the
proxy holding the answer, deciding, cutting or releasing it), and resumes on a random
replica; the others are the same overlap without a move. What the client saw is kept
per turn: how the first answer ended (``response.done`` status, its
``conversation.item.truncated`` count) and the answers after it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pybase64
from resume_records import Answer
from resume_session import CHUNK_MS, RATE, Session

LEAD_MS = 100  # what an overlap clip keeps before its speech
SETTLE_S = 3.0  # after the overlap clip: how long a turn it started may take to come
DROP_SHARE = 0.8  # turns that drop around the overlap (the others: the same, unmoved)


def trim(pcm: bytes, speech_start_ms: int) -> bytes:
    """The clip from ``LEAD_MS`` before its speech on."""
    start = max(0, speech_start_ms - LEAD_MS) * RATE // 1000 * 2
    return pcm[start:]


class OverlapSession(Session):
    def __init__(
        self,
        *args: Any,
        what: str,
        over: list[tuple[str, bytes]],
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.what = what  # "barge_in" or "backchannel"
        self.over = over
        self.sent_at: list[float] = []
        self.drop_at: float | None = None

    def drop_soon(self) -> None:
        if self.connected.is_set() and self.dropping is None:
            self.drop_at = time.monotonic()
        super().drop_soon()

    async def _mic(self, pcm: bytes, until: Callable[[], bool] | None, max_s: float) -> None:
        """``pcm`` then silence, in real time, until ``until()`` or ``max_s`` past ``pcm``."""
        step = RATE * 2 * CHUNK_MS // 1000
        self.sent_at = []
        t0 = time.monotonic()
        end = t0 + len(pcm) / (RATE * 2) + max_s
        n = 0
        while True:
            if n * step < len(pcm):
                chunk = pcm[n * step : (n + 1) * step]
            elif (until is not None and until()) or time.monotonic() >= end:
                return
            else:
                chunk = b"\0\0" * (step // 2)
            await self.send(
                {"type": "input_audio_buffer.append", "audio": pybase64.b64encode(chunk).decode()}
            )
            self.sent_at.append(time.monotonic())
            n += 1
            await asyncio.sleep(max(0.0, t0 + n * CHUNK_MS / 1000 - time.monotonic()))

    async def _turn(self) -> None:
        await self._mark()
        self.cut, self.drop_at = None, None
        first = len(self.out.answers)
        self.trace = []

        def answer() -> Answer | None:
            return self.out.answers[first] if len(self.out.answers) > first else None

        def playing() -> bool:
            a = answer()
            return a is not None and (bool(a.audio) or a.status is not None)

        await self._mic(self.clip, playing, 15.0)
        a = answer()
        if a is None or not a.audio:
            raise RuntimeError(f"no answer audio to speak over (turn {self.out.turns})")
        name, over = self.over[self.rng.randrange(len(self.over))]
        gap = self.rng.uniform(0.0, 0.3)
        offset = self.rng.uniform(-0.3, 1.5)  # the drop, from the overlap's onset
        drop = self.out.disconnects < self.quota and self.rng.random() < DROP_SHARE
        if drop:
            loop = asyncio.get_running_loop()
            loop.call_later(max(0.0, gap + LEAD_MS / 1000 + offset), self.drop_soon)
        await self._mic(b"", None, gap)
        clip_end = 0.0

        def settled() -> bool:
            nonlocal clip_end
            clip_end = clip_end or time.monotonic()
            later = self.out.answers[first + 1 :]
            if a.status is None or any(b.status is None for b in later):
                return False
            return bool(later) or time.monotonic() - clip_end >= SETTLE_S

        await self._mic(over, settled, 20.0)
        onset = self.sent_at[min(LEAD_MS // CHUNK_MS, len(self.sent_at) - 1)]
        later = self.out.answers[first + 1 :]
        self.out.overlaps.append(
            {
                "session": self.sid,
                "turn": self.out.turns,
                "what": self.what,
                "kind": self.kind,
                "clip": name,
                "response_id": a.response_id,  # the answer spoken over (the replicas' logs)
                "drop_s": None if self.drop_at is None else round(self.drop_at - onset, 2),
                "aborted": self.drop_at is not None and self.aborted,
                "status": a.status,
                "truncated": a.truncated,
                "other_replica": a.moves_other > 0,
                "later": [b.status for b in later],
                "events": [e for e in self.trace if "delta" not in e],
            }
        )
        await self.send({"type": "session.event_ack", "server_event_seq": self.last})
