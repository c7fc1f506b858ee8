"""The client's audio as a duplex upstream reads it, for the GA relay.

A route may declare that its upstream reads float input (PersonaPlex:
``pcm_f32le`` at 24 kHz, ``docs/fidelity.md`` rows 11 and 11a). Once the upstream's
``session.created`` confirms it, every append goes upstream converted to it, in whole
model frames (``chunk_period_ms``), the remainder carried to the next append; a
relayed commit takes the remainder along, a clear drops it (``shim/upstream_input.py``).
A G.711 client's appends go up decoded to PCM16 at their 8 kHz, as
``shim/ga_upstream.py`` declares them (vLLM-Omni has no GA G.711 names).

It also follows what the upstream session has been given, which decides whether its
instructions are fixed (``relay_context_lock.py``). What the edge holds while a session
is dialled goes to it (``proxy/emulated/upstream_control.py``): the count starts again
when a fresh session is asked for (``AbortUpstream``), not when it is bound, and what
was sent while a resume was tried goes on to the fresh session if it fails. Each
append counts as it goes upstream (converted, in whole units), read as vLLM-Omni reads
it for silence; a move carries the count (``wire``, ``restore``). The silence level is
the one the upstream's ``session.created`` (or ``session.resumed``) reports, its
``overlap_silence_rms`` (``engine/duplex/session/engine_session.py``,
``as_public_dict``), else the one it was stated: at the opening the ``extra_body`` one
over the flat one (``engine/duplex/config.py``, ``from_event``), live the flat one only
(``apply_realtime_update``); a move carries it too. A fresh session after a loss
reports the route's level, then runs the flat one of the client's kept settings given
it as an update (``duplex_relay.py``, ``on_upstream_lost``), or of a later one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from shim.actions import AbortUpstream, Action, ForwardUpstream, ResumeUpstream, SendUpstream
from shim.audio import PCM16, AudioError, AudioFormat, b64decode
from shim.dialects.relay_context_lock import INTAKE, SILENCE_RMS, ContextLock, speech
from shim.g711 import G711_ENCODINGS
from shim.inputs import Input, UpstreamEvent
from shim.settings import VAD_RATE
from shim.upstream_input import AppendConverter, declared_float_input, state_input, unit_samples
from shim.upstream_timeline import UpstreamTimeline

HEARD = "upstream_heard"  # the snapshot's keys: the upstream session's context is locked,
SPOKE = "upstream_spoke"  # and its current response's playback has audio (voice fixed)
_RMS = "silence_rms"  # in INTAKE: the level the upstream session reads silence under
_READ = frozenset(
    {
        "input_audio_buffer.commit",
        "conversation.item.create",
        "response.cancel",
        "output_audio_buffer.clear",
    }
)


class UpstreamAudio:
    __slots__ = (
        "caps",
        "converter",
        "g711",
        "given",
        "held",
        "lock",
        "redialed",
        "reported",
        "silence_rms",
        "timeline",
    )

    def __init__(self, upstream_capabilities: Mapping[str, Any] | None) -> None:
        self.caps: Mapping[str, Any] = upstream_capabilities or {}
        self.converter: AppendConverter | None = None
        self.g711: AppendConverter | None = None  # G.711 -> PCM16, no pinned format
        self.lock = ContextLock(self.caps)  # this upstream session's (or the next one's)
        self.held: ContextLock | None = None  # while a resume is tried: what went since
        self.silence_rms = SILENCE_RMS
        self.reported = False  # the upstream session said its silence level
        self.redialed = False  # a fresh session asked for, its session.created not yet in
        self.given: float | None = None  # the flat level last updated since: it runs it
        self.timeline: UpstreamTimeline | None = None  # told of a unit a clear drops

    @property
    def heard(self) -> bool:
        """The upstream session's instructions are fixed (``ga_instructions.py``)."""
        return self.lock.locked

    @property
    def spoke(self) -> bool:
        """The upstream session's voice is fixed (``ga_voice.py``)."""
        return self.lock.spoke

    def stated(self, session: Any, opening: bool = False, client: bool = False) -> None:
        """A session object the upstream session takes: its ``extra_body.auto_response``,
        ``overlap_silence_rms`` and, what every one opens with (``opening``: the route's),
        ``initial_user_text`` (``engine/duplex/config.py``: an update leaves it). At the
        opening ``extra_body.overlap_silence_rms`` wins (``from_event`` reads it last),
        unless the upstream session has already reported the level it took. ``client``:
        the client's opening, which a fresh session after a loss does not open with."""
        if not isinstance(session, Mapping):
            return
        extra = session.get("extra_body")
        extra = extra if isinstance(extra, Mapping) else {}
        auto = extra.get("auto_response")
        seed = session.get("initial_user_text")
        for given in (session.get("overlap_silence_rms"), extra.get("overlap_silence_rms")):
            rms = _level(given)
            if rms is not None and not (opening and self.reported):
                self.silence_rms = rms
            if not opening:
                break  # apply_realtime_update reads the flat one only
        for lock in self._locks():
            if isinstance(auto, bool):
                lock.auto = auto
            if opening and isinstance(seed, str):
                lock.seeded(seed, client)

    def _locks(self) -> tuple[ContextLock, ...]:
        return (self.lock,) if self.held is None else (self.lock, self.held)

    @property
    def pinned(self) -> AudioFormat | None:
        return None if self.converter is None else self.converter.target

    def bind(self, event: Mapping[str, Any], last_update: dict[str, Any] | None) -> None:
        """Follow the upstream's session (created, or the one it resumed)."""
        self.held = None
        session = event.get("session")
        rms = _level(session.get("overlap_silence_rms") if isinstance(session, Mapping) else None)
        if rms is not None:
            self.silence_rms, self.reported = rms, True
        if self.redialed and self.given is not None and event.get("type") == "session.created":
            self.silence_rms = self.given  # the update after its opening applies it
        self.redialed, self.given = False, None
        if event.get("type") != "session.created" or not isinstance(session, Mapping):
            # Its own session back (a resume, maybe restored): what the proxy last stated.
            session = last_update["session"] if last_update is not None else None
        pinned = declared_float_input(session)
        if pinned is None:
            self.converter = None
            return
        caps = session.get("capabilities") if isinstance(session, Mapping) else None
        unit = unit_samples(pinned, caps if isinstance(caps, Mapping) else self.caps)
        unit_bytes = None if unit is None else unit * pinned.bytes_per_sample
        if self.converter is None or (self.converter.target, self.converter.unit_bytes) != (
            pinned,
            unit_bytes,
        ):
            self.converter = AppendConverter(pinned, unit)
        if last_update is not None:
            state_input(last_update["session"], pinned)

    def appends(self, ev: dict[str, Any], client_format: AudioFormat) -> list[Action] | None:
        """The append as it goes upstream (none, one or several), or None when it goes
        as it is. Held audio released later passes here too, in upstream order."""
        converter = self.converter
        if converter is None and client_format.encoding in G711_ENCODINGS:
            pcm = AudioFormat(PCM16, client_format.rate_hz)
            if self.g711 is None or self.g711.target != pcm:
                self.g711 = AppendConverter(pcm)
            converter = self.g711
        if converter is None:
            self._count(ev.get("audio"), client_format)
            return None
        events = converter.appends(ev, client_format)
        for one in events:
            self._count(one.get("audio"), converter.target)
        return [SendUpstream(one) for one in events]

    def _count(self, audio: Any, fmt: AudioFormat) -> None:
        """An append gone upstream in ``fmt`` (PCM16 or float). A locked session stays
        locked (``relay_context_lock.py``): its appends are not read at all."""
        open_locks = [lock for lock in self._locks() if not lock.locked]
        if not open_locks or not isinstance(audio, str):
            return
        try:
            raw = b64decode(audio)
        except AudioError:
            return  # the upstream refuses it
        heard = speech(raw, fmt, self.silence_rms)
        for lock in open_locks:
            lock.appended(fmt.ms(len(raw)), heard)

    def forwarded(self, action: ForwardUpstream, kind: object) -> list[Action]:
        """A client event relayed as it came."""
        event = orjson.loads(action.raw) if kind in _READ else None
        out: list[Action] = [action]
        if self.converter is not None and kind == "input_audio_buffer.commit":
            rest = self.converter.flush()
            if rest is not None:
                self._count(rest.get("audio"), self.converter.target)
                out = [SendUpstream(rest), action]
        elif self.converter is not None and kind == "input_audio_buffer.clear":
            dropped = self.converter.drop()  # never went: off the upstream's timeline
            if self.timeline is not None and dropped:
                self.timeline.unsent(round(dropped * VAD_RATE / self.converter.target.rate_hz))
        for lock in self._locks():
            lock.sent(kind, event if isinstance(event, dict) else None)
        return out

    def follow(self, actions: list[Action], inp: Input | None = None) -> None:
        """The shim's answer to an input, before what it sends goes out: a resume tried
        starts counting what the edge holds for it; a fresh session asked for hears
        only what the edge carries over to it (held for a failed resume) and after.
        An upstream event (``inp``) may show its session taking a turn."""
        if isinstance(inp, UpstreamEvent):
            self.lock.heard(inp.event)
        for action in actions:
            if isinstance(action, SendUpstream):  # the proxy's own (a cut, kept settings)
                for lock in self._locks():
                    lock.sent(action.event.get("type"), action.event)
                self._given(action.event)
            elif isinstance(action, ResumeUpstream):
                self.held = self.lock.fresh()
            elif isinstance(action, AbortUpstream) and action.redial:
                carried = self.held if self.held is not None and action.after_loss else None
                self.lock, self.held = carried or self.lock.fresh(), None
                self.redialed, self.given = True, None

    def _given(self, event: Mapping[str, Any]) -> None:
        """An update going to a fresh session still dialled: its flat level, read live."""
        session = event.get("session")
        if self.redialed and event.get("type") == "session.update" and isinstance(session, Mapping):
            rms = _level(session.get("overlap_silence_rms"))
            self.given = rms if rms is not None else self.given

    def wire(self) -> dict[str, Any]:
        """The snapshot's part: whether the upstream session's instructions and voice
        are fixed, and what decides it from here on."""
        heard = {HEARD: True} if self.heard else {}
        intake = {**self.lock.wire(), _RMS: self.silence_rms}
        return {**heard, **({SPOKE: True} if self.spoke else {}), INTAKE: intake}

    def restore(self, snap: Mapping[str, Any], resumed: Mapping[str, Any] | None) -> None:
        """After a move: the resumed upstream session as it was (its audio buffered or
        committed, its user items unanswered); a fresh one keeps only the client's
        ``auto_response``. A snapshot without ``INTAKE`` leaves the route's. Either
        keeps the silence level (the fold states it; the new session may report it)."""
        self.lock = self.lock.fresh()
        intake = snap.get(INTAKE)
        rms = _level(intake.get(_RMS) if isinstance(intake, Mapping) else None)
        if rms is not None:
            self.silence_rms = rms
        if resumed is None:
            auto = intake.get("auto") if isinstance(intake, Mapping) else None
            self.lock.auto = auto if isinstance(auto, bool) else self.lock.auto
            return
        self.lock.load(intake)
        self.lock.locked = snap.get(HEARD) is True
        self.lock.spoke = snap.get(SPOKE) is True


def _level(value: Any) -> float | None:
    """An ``overlap_silence_rms`` as vLLM-Omni takes it (a number, at least 0), or None."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return max(0.0, float(value))
    return None
