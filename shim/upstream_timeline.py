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

So the proxy records, at the moment it goes upstream and in that order (an append
carries its place: ``SendUpstream.span``), where each run of audio the upstream
session got lies on the client's timeline (input samples at the VAD rate,
``shim/input_history.py``), and rewrites those ms on the way to the client. What
was never forwarded is the gap between two runs, and so is the part of a float
upstream's unit a clear drops before it went (``unsent``). Bounded: the oldest runs
are forgotten, and a time before the oldest kept run maps by that run's offset.

A ``speech_started`` is the detected onset less the session's ``prefix_padding_ms``,
never before the detector's last reset (``engine/duplex/vad.py``). The padding may
reach back across audio the gate dropped, so the onset (start plus padding) is what
is mapped, and the padding taken off on the client's timeline, as a client talking
to the upstream directly would have got it (a start whose onset would lie past what
the upstream got was floored at the reset: it is mapped itself). The padding is the
one the upstream session opened with or was last given (300 ms, its default, if that
names none; none if it opened without turn detection). Without turn detection the
upstream's speech times are the client's own append hints, or its placeholder 0
(``realtime_events.py``, ``note_input_append``), and so is a commit's
``speech_stopped`` ``audio_end_ms`` 0 (``resolve_commit``): none is rewritten.
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
STARTED, STOPPED = PREFIX + "speech_started", PREFIX + "speech_stopped"
WIRE = "upstream_timeline"  # the snapshot's key
PADDING_MS = 300  # vLLM-Omni's prefix_padding_ms when an update names none


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

    def unsent(self, samples: int) -> None:
        """The last ``samples`` recorded never reached the upstream (dropped before
        they went): what comes next begins a run."""
        self.sent_samples = max(0, self.sent_samples - samples)
        while self._runs and self._runs[-1][0] > self.sent_samples:
            self._runs.pop()  # a run all of which was dropped
        self._next = None

    def client_start_ms(self, ms: float, padding_ms: int) -> int:
        """A ``speech_started``'s padded start: its onset mapped, less the padding
        (not before the client's timeline begins). An onset past what the upstream got
        was never heard: the start was floored at the detector's last reset, and is
        mapped itself."""
        if not self._runs:
            return round(ms)
        if (ms + padding_ms) * VAD_RATE / 1000 > self.sent_samples:
            return self.client_ms(ms)
        return max(0, self.client_ms(ms + padding_ms) - padding_ms)

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


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class UpstreamTimeline:
    """The current upstream session's map, and the one a fresh session would get."""

    __slots__ = ("_carry", "_fresh", "_unapplied", "_undo", "now", "padding_ms")

    def __init__(self) -> None:
        self.now = TimelineMap()
        # While a resume is tried: what went since, which a fresh session gets instead
        # if the resume fails (the edge carries it over: ``proxy/emulated/upstream_control.py``).
        self._carry: TimelineMap | None = None
        self._unapplied: Mapping[str, Any] | None = None  # an update the upstream refuses
        self._fresh = False  # a fresh session asked for by this input
        # The upstream session's prefix padding; None: no turn detection there.
        self.padding_ms: int | None = PADDING_MS
        # An update naming turn detection not yet taken (``session.updated``): its
        # event_id and the timeline as it was, which an error naming it puts back.
        self._undo: tuple[str, TimelineMap, TimelineMap | None, int | None] | None = None

    def opened(self, session: Mapping[str, Any]) -> None:
        """The session object the upstream session opened with (never an update
        through the relay): the padding its detector runs with, or no detector at all
        if it names no turn detection (``session/control.py``, ``init_turn_detection``)."""
        detection = _turn_detection({"type": "session.update", "session": session})
        self.padding_ms = None if detection is _NOT_NAMED else _padding(detection)

    def _maps(self) -> tuple[TimelineMap | None, ...]:
        undo = self._undo[1:3] if self._undo is not None else ()
        return (self.now, self._carry, *undo)

    def sent(self, start: int, end: int) -> None:
        for m in self._maps():
            if m is not None:
                m.sent(start, end)

    def unsent(self, samples: int) -> None:
        """The last ``samples`` recorded were dropped before they went upstream."""
        for m in self._maps():
            if m is not None:
                m.unsent(samples)

    def follow(self, actions: Iterable[Action]) -> None:
        """The session's answer to an input, before what it sends goes out (all of
        it, in order, at once)."""
        for action in actions:
            self.went(action)
        self.settled()

    def went(self, action: Action) -> None:
        """One action, as it goes. An append records its span. An update naming turn
        detection restarts the upstream's clock (vLLM-Omni builds a fresh detector,
        its clock at zero: ``docs/fidelity.md``, row 2a) and sets its padding; one
        that opens a fresh session goes before any of its audio, so its clock starts
        there anyway."""
        if isinstance(action, ResumeUpstream):
            self._carry, self._undo = TimelineMap(), None
        elif isinstance(action, AbortUpstream) and action.redial:
            carried = self._carry if action.after_loss else None
            self.now, self._carry, self._fresh = carried or TimelineMap(), None, True
            self._undo = None
        elif isinstance(action, SendUpstream):
            if action.span is not None:
                self.sent(*action.span)
            detection = _turn_detection(action.event)
            if detection is _NOT_NAMED or action.event is self._unapplied:
                return
            event_id = action.event.get("event_id")
            if not self._fresh and isinstance(event_id, str):
                self._undo = (event_id, self.now, self._carry, self.padding_ms)
            self.padding_ms = _padding(detection)
            if not self._fresh:
                self.now = TimelineMap()
                self._carry = None if self._carry is None else TimelineMap()

    def settled(self) -> None:
        """The input's actions are all gone."""
        self._unapplied, self._fresh = None, False

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
        if kind in ("session.updated", "error"):
            self._taken(ev)
        if not (isinstance(kind, str) and kind.startswith(PREFIX)):
            return
        if self.padding_ms is None and kind in (STARTED, STOPPED):
            return  # the client's own hints (no turn detection upstream)
        for field in FIELDS:
            ms = ev.get(field)
            if not isinstance(ms, int | float) or isinstance(ms, bool):
                continue
            if field == "audio_end_ms":
                if ms != 0:  # 0: a commit's placeholder, no time at all
                    ev[field] = self.now.client_ms(ms, end=True)
            elif kind == STARTED and self.padding_ms is not None:
                ev[field] = self.now.client_start_ms(ms, self.padding_ms)
            else:
                ev[field] = self.now.client_ms(ms)

    def _taken(self, ev: Mapping[str, Any]) -> None:
        """The upstream took the update naming turn detection (``session.updated``), or
        refused it whole (an error naming it, for a reason the relay did not foresee:
        ``session/control.py``, ``on_session_update``): its detector and clock stay."""
        if self._undo is None:
            return
        err = ev.get("error")
        if ev.get("type") == "error":
            if not (isinstance(err, Mapping) and err.get("event_id") == self._undo[0]):
                return
            _, self.now, self._carry, self.padding_ms = self._undo
        self._undo = None

    def wire(self) -> dict[str, Any]:
        return {WIRE: {**self.now.wire(), "padding_ms": self.padding_ms}}

    def restore(self, snap: Mapping[str, Any], resumed: Mapping[str, Any] | None) -> None:
        """After a move: a resumed upstream session's timeline goes on from the
        snapshot's (a snapshot without one: as if nothing was dropped); a fresh one
        starts at zero. Either keeps the padding (the client's settings go to it)."""
        self._carry = self._undo = None
        raw = snap.get(WIRE)
        self.now = TimelineMap.from_wire(raw) if resumed is not None else TimelineMap()
        padding = raw.get("padding_ms", PADDING_MS) if isinstance(raw, Mapping) else PADDING_MS
        self.padding_ms = padding if padding is None or _count(padding) else PADDING_MS


_NOT_NAMED = object()


def _turn_detection(event: Mapping[str, Any]) -> Any:
    """The turn detection a ``session.update`` names (either spelling, ``null`` too),
    else ``_NOT_NAMED``."""
    if event.get("type") != "session.update":
        return _NOT_NAMED
    session = event.get("session")
    session = session if isinstance(session, Mapping) else event
    audio = session.get("audio")
    audio_in = audio.get("input") if isinstance(audio, Mapping) else None
    if isinstance(audio_in, Mapping) and "turn_detection" in audio_in:
        return audio_in["turn_detection"]
    return session.get("turn_detection", _NOT_NAMED)


def _padding(detection: Any) -> int | None:
    """The prefix padding vLLM-Omni runs with ``detection`` (it replaces the whole
    object: ``engine/duplex/turn_detection.py``, ``from_realtime``); None: none."""
    if not isinstance(detection, Mapping):
        return None
    padding = detection.get("prefix_padding_ms", PADDING_MS)
    if isinstance(padding, int | float) and not isinstance(padding, bool) and padding >= 0:
        return int(padding)
    return PADDING_MS
