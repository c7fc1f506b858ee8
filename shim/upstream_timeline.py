"""The upstream's input timeline, mapped onto the client's.

A duplex upstream times the speech it hears (``audio_start_ms``, ``audio_end_ms``)
in ms of the audio its session received (vLLM-Omni's VAD counts the samples it
was given: ``engine/duplex/vad.py``); a client reads them as ms of all the audio it
sent in the session (GA: "from the start of all audio written to the buffer").
Through the proxy the two differ: the gate drops what it held over an answer that
was no barge-in (``shim/dialects/relay_gate.py``), a fresh upstream session after a
loss starts counting again at zero, and after a move the client's timeline starts
again at zero while a resumed upstream session's goes on. Converting the audio to
the upstream's format or rate changes none of these durations.

So the proxy records, in the order it goes upstream, where each run of audio the
upstream session got lies on the client's timeline (input samples at the VAD rate,
``shim/input_history.py``), and rewrites those ms on the way to the client. What
was never forwarded is the gap between two runs. Bounded: the oldest runs are
forgotten, and a time before the oldest kept run maps by that run's offset.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from shim.actions import AbortUpstream, Action, ResumeUpstream, SendUpstream
from shim.settings import VAD_RATE

# Runs kept; each is a gap in what went upstream (an answer's held audio dropped).
KEPT = 64
# The fields on the input timeline, in the upstream's ``input_audio_buffer.*`` events
# (not a truncate's ``audio_end_ms``, which is on the assistant's audio).
FIELDS = ("audio_start_ms", "audio_end_ms")
PREFIX = "input_audio_buffer."
WIRE = "upstream_timeline"  # the snapshot's key


class TimelineMap:
    """One upstream session's input timeline on the client's."""

    __slots__ = ("_next", "_runs", "sent_samples")

    def __init__(self, sent_samples: int = 0) -> None:
        # (upstream sample, client sample) where each run of contiguous audio began.
        self._runs: deque[tuple[int, int]] = deque(maxlen=KEPT)
        self.sent_samples = sent_samples  # what the upstream session got so far
        self._next: int | None = None  # the client sample after the last one sent

    def sent(self, start: int, end: int) -> None:
        """Client audio ``[start, end)`` (input samples) goes upstream, after what went."""
        if end <= start:
            return  # nothing (a refused append; one the resampler gave no samples yet)
        if start != self._next:
            if self._runs and self._runs[-1][0] == self.sent_samples:
                self._runs.pop()  # a run nothing came of
            self._runs.append((self.sent_samples, start))
        self.sent_samples += end - start
        self._next = end

    def client_ms(self, ms: float, end: bool = False) -> int:
        """Upstream time ``ms`` on the client's timeline. At a gap a start is the
        audio after it, an ``end`` the audio before it."""
        if not self._runs:
            return round(ms)
        sample = ms * VAD_RATE / 1000
        at, client = self._runs[0]
        for up, cl in self._runs:
            if up < sample or (up == sample and not end):
                at, client = up, cl
            else:
                break
        return max(0, round((client + sample - at) * 1000 / VAD_RATE))

    def wire(self) -> dict[str, Any]:
        return {"sent": self.sent_samples, "runs": [list(run) for run in self._runs]}

    @classmethod
    def from_wire(cls, raw: Any) -> TimelineMap:
        """A snapshot's map, read leniently (anything unreadable: a fresh one). The
        client's timeline after a move starts again: the next audio begins a run."""
        if not isinstance(raw, Mapping):
            return cls()
        sent, runs = raw.get("sent"), raw.get("runs")
        if not (_count(sent) and isinstance(sent, int) and isinstance(runs, list)):
            return cls()
        out = cls(sent)
        for run in runs:
            if isinstance(run, list) and len(run) == 2 and all(_count(v) for v in run):
                out._runs.append((run[0], run[1]))
        return out


def _restarts(event: Mapping[str, Any]) -> bool:
    """A ``session.update`` naming turn detection (either spelling, ``null`` too)."""
    if event.get("type") != "session.update":
        return False
    session = event.get("session")
    session = session if isinstance(session, Mapping) else event
    audio = session.get("audio")
    audio_in = audio.get("input") if isinstance(audio, Mapping) else None
    return "turn_detection" in session or (
        isinstance(audio_in, Mapping) and "turn_detection" in audio_in
    )


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class UpstreamTimeline:
    """The current upstream session's map, and the one a fresh session would get."""

    __slots__ = ("_carry", "_unapplied", "now")

    def __init__(self) -> None:
        self.now = TimelineMap()
        # While a resume is tried: what went since, which a fresh session gets instead
        # if the resume fails (the edge carries it over: ``proxy/emulated/upstream_control.py``).
        self._carry: TimelineMap | None = None
        self._unapplied: Mapping[str, Any] | None = None  # an update the upstream refuses

    def sent(self, start: int, end: int) -> None:
        self.now.sent(start, end)
        if self._carry is not None:
            self._carry.sent(start, end)

    def follow(self, actions: Iterable[Action]) -> None:
        """The session's answer to an input, before what it sends goes out. An update
        naming turn detection restarts the upstream's clock (vLLM-Omni builds a fresh
        detector, its clock at zero: ``docs/fidelity.md``, row 2a); one that opens a
        fresh session goes before any of its audio, so its clock starts there anyway."""
        fresh = False
        for action in actions:
            if isinstance(action, ResumeUpstream):
                self._carry = TimelineMap()
            elif isinstance(action, AbortUpstream) and action.redial:
                carried = self._carry if action.after_loss else None
                self.now, self._carry, fresh = carried or TimelineMap(), None, True
            elif isinstance(action, SendUpstream) and not fresh and _restarts(action.event):
                if action.event is not self._unapplied:
                    self.now = TimelineMap()
                    self._carry = None if self._carry is None else TimelineMap()
        self._unapplied = None

    def unapplied(self, update: Mapping[str, Any]) -> None:
        """``update`` goes upstream to be refused there whole: its detector stays."""
        self._unapplied = update

    def reattached(self, event: Mapping[str, Any]) -> None:
        """The upstream's own session is back (``session.resumed``): its timeline goes on."""
        if event.get("type") != "session.created":
            self._carry = None

    def to_client(self, ev: dict[str, Any]) -> None:
        """An upstream event (the session's own copy) with its input-timeline ms
        rewritten onto the client's timeline."""
        kind = ev.get("type")
        if not (isinstance(kind, str) and kind.startswith(PREFIX)):
            return
        for field in FIELDS:
            ms = ev.get(field)
            if isinstance(ms, int | float) and not isinstance(ms, bool):
                ev[field] = self.now.client_ms(ms, end=field == "audio_end_ms")

    def wire(self) -> dict[str, Any]:
        return {WIRE: self.now.wire()}

    def restore(self, snap: Mapping[str, Any], resumed: Mapping[str, Any] | None) -> None:
        """After a move: a resumed upstream session's timeline goes on from the
        snapshot's (a snapshot without one: as if nothing was dropped); a fresh one
        starts at zero."""
        self._carry = None
        self.now = TimelineMap.from_wire(snap.get(WIRE)) if resumed is not None else TimelineMap()
