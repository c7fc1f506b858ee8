"""Where the microphone is now on the input timeline, however late its audio arrives.

The assistant's audio is placed on the microphone's timeline for echo suppression
where it will sound (``shim/output.py``): at the microphone sample being captured as
it plays. Taking that to be the newest sample received assumes each chunk arrives as
it is captured. A client that sends its microphone late (in 200-500 ms chunks, over a
congested uplink, from a busy thread) is behind by up to that much, and by a varying
amount: the answer's audio sent meanwhile was placed that much early, its echo came
back that much later than the suppressor's lock, or beyond its delay search, and passed
as the user's voice (``docs/benchmarks.md``, "The answer's echo in real time").

The clock tells how far the capture has gone beyond the newest sample received: each
chunk's offset is its arrival time less its end's time on the timeline, and the least
offset of the last ``WINDOW_MS`` (the chunk that came soonest after its capture) dates
the capture. A client on time leads by nothing (``SLACK_MS``); one sending 500 ms
chunks leads by the time since the last one arrived. After a gap in arrivals longer
than ``GAP_MS`` the offsets before it are forgotten: a client that paused (a muted or
gated microphone: its samples resume where they stopped, on time) would otherwise be
taken for late by the pause's length for as long as they stay in the window, and a
client that stalled sends its backlog in a burst whose last chunk, on time, dates the
capture again. (A stall whose backlog trickles in is then dated by its late chunks,
placed as early as without the clock.)

Chunks are dated by when they arrived (the edge's read time, ``ClientEvent.arrived_ms``),
not by when they were handled: a proxy short of CPU handles its inputs in bursts,
later than they came, and a burst's chunks, handled at once, looked like a client
that had paused (the clock started afresh at the first) and then like one that was
as far behind as the burst was late, so the answer's audio sent amid a burst was
placed that much early (``docs/benchmarks.md``, "The answer's echo when the proxy
handles late").

The audio itself is placed from when it is sent, not from when it arrived: the edge
stamps an upstream event as it arrives, and a session loop that is behind (waiting on
the VAD's bounded queue, under load) handles and sends it later, by a lag that grows
and shrinks. The client starts each delta when it gets it or when its queue runs out,
so the playback the far audio follows (``play``) runs on the send time: no earlier
than the newest input stamp handled (``sent``), as inputs are handled in order.
Sans-I/O: arrival times are inputs (ms).
"""

from __future__ import annotations

from collections import deque

from shim.settings import VAD_RATE

WINDOW_MS = 1000.0
# Lead taken as none: a client on time sends each chunk (20 ms, as GA clients do) once
# captured, so the newest sample received trails the capture by up to a chunk, which the
# echo delay has always included; a client that sends chunks as they begin (this
# project's replays, ``bench/bargein_replay.py``) is ahead by as much.
SLACK_MS = 20.0
# Arrivals further apart than this start the window afresh: longer than the jitter of
# 20-100 ms chunks sent on time, shorter than a pause that would misplace the echo.
GAP_MS = 100.0


class MicClock:
    def __init__(self, window_ms: float = WINDOW_MS) -> None:
        self.window_ms = window_ms
        # (arrival ms, offset ms), offsets increasing: the least of the window first.
        self._lows: deque[tuple[float, float]] = deque()
        self.latest_ms = float("-inf")  # the newest microphone stamp handled
        # When the client event being handled arrived, if earlier than its stamp (the
        # edge's read time: ``shim/inputs.py`` ``ClientEvent``); set for each one.
        self.arrival: float | None = None
        self._arrived = float("-inf")  # the newest arrival
        self._item: str | None = None  # the item whose audio ``play`` follows
        self._play_end = 0.0  # when the client runs out of it, on the send time

    def sent(self, now_ms: float) -> float:
        """When output handled now goes out: its own stamp may be its arrival's."""
        return max(now_ms, self.latest_ms)

    def play(self, item_id: str, sent_ms: float, duration_ms: float) -> float:
        """Audio of ``item_id`` sent at ``sent_ms``: when the client starts playing it
        (as soon as it has it, or once what it queued before has played)."""
        if item_id != self._item:
            self._item, self._play_end = item_id, 0.0
        start = max(self._play_end, sent_ms)
        self._play_end = start + duration_ms
        return start

    def heard(self, end_sample: int, now_ms: float) -> None:
        """Input up to ``end_sample`` (exclusive) handled at ``now_ms``, and arrived then
        or at ``arrival``."""
        arrived = now_ms if self.arrival is None else min(self.arrival, now_ms)
        if arrived - self._arrived > GAP_MS:
            self._lows.clear()
        self._arrived = max(self._arrived, arrived)
        self.latest_ms = max(self.latest_ms, now_ms)
        offset = arrived - end_sample * 1000.0 / VAD_RATE
        while self._lows and self._lows[-1][1] >= offset:
            self._lows.pop()
        self._lows.append((arrived, offset))
        self._expire(now_ms)

    def lead(self, newest: int, now_ms: float) -> int:
        """Samples the microphone has captured by ``now_ms`` beyond ``newest``, the
        newest received (0 with no arrival within the window)."""
        self._expire(now_ms)
        if not self._lows:
            return 0
        ahead_ms = now_ms - self._lows[0][1] - newest * 1000.0 / VAD_RATE - SLACK_MS
        return int(min(max(0.0, ahead_ms), self.window_ms) * VAD_RATE / 1000.0)

    def _expire(self, now_ms: float) -> None:
        while self._lows and self._lows[0][0] < now_ms - self.window_ms:
            self._lows.popleft()
