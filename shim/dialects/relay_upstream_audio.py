"""The client's audio as a duplex upstream reads it, for the GA relay.

A route may declare that its upstream reads float input (PersonaPlex:
``pcm_f32le`` at 24 kHz, ``docs/fidelity.md`` rows 11 and 11a). Once the upstream's
``session.created`` confirms it, every append goes upstream converted to it, in whole
model frames (``chunk_period_ms``), the remainder carried to the next append; a
relayed commit takes the remainder along, a clear drops it (``shim/upstream_input.py``).
A G.711 client's appends go up decoded to PCM16 at their 8 kHz, as
``shim/ga_upstream.py`` declares them (vLLM-Omni has no GA G.711 names).

It also knows whether the upstream session has been given any input: vLLM-Omni fixes
a session's instructions at the first append it accepts, the client's audio or, for a
``response.create``, the conversation (``ga_instructions.py``). What the edge holds
while a session is dialled goes to it (``proxy/emulated/upstream_control.py``): the
count starts again when a fresh session is asked for (``AbortUpstream``), not when it
is bound, and what was held for a resume that failed goes on to the fresh session.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shim.actions import AbortUpstream, Action, ForwardUpstream, ResumeUpstream, SendUpstream
from shim.audio import PCM16, AudioFormat
from shim.g711 import G711_ENCODINGS
from shim.upstream_input import AppendConverter, declared_float_input, state_input, unit_samples

HEARD = "upstream_heard"  # the snapshot's key


class UpstreamAudio:
    __slots__ = ("caps", "converter", "g711", "heard", "held")

    def __init__(self, upstream_capabilities: Mapping[str, Any] | None) -> None:
        self.caps: Mapping[str, Any] = upstream_capabilities or {}
        self.converter: AppendConverter | None = None
        self.g711: AppendConverter | None = None  # G.711 -> PCM16, no pinned format
        self.heard = False  # some input went to this upstream session (or the next)
        self.held: bool | None = None  # while a resume is tried: input went since

    @property
    def pinned(self) -> AudioFormat | None:
        return None if self.converter is None else self.converter.target

    def bind(self, event: Mapping[str, Any], last_update: dict[str, Any] | None) -> None:
        """Follow the upstream's session (created, or the one it resumed)."""
        self.held = None
        session = event.get("session")
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
        self._sent()
        converter = self.converter
        if converter is None and client_format.encoding in G711_ENCODINGS:
            pcm = AudioFormat(PCM16, client_format.rate_hz)
            if self.g711 is None or self.g711.target != pcm:
                self.g711 = AppendConverter(pcm)
            converter = self.g711
        if converter is None:
            return None
        return [SendUpstream(a) for a in converter.appends(ev, client_format)]

    def forwarded(self, action: ForwardUpstream, kind: object) -> list[Action]:
        """A client event relayed as it came."""
        if kind == "response.create":
            self._sent()  # locks it as audio does (``ga_instructions.py``)
        if self.converter is None:
            return [action]
        if kind == "input_audio_buffer.commit":
            rest = self.converter.flush()
            return [SendUpstream(rest), action] if rest is not None else [action]
        if kind == "input_audio_buffer.clear":
            self.converter.drop()
        return [action]

    def _sent(self) -> None:
        self.heard = True
        if self.held is not None:
            self.held = True

    def follow(self, actions: list[Action]) -> None:
        """The shim's answer to an input, before what it sends goes out: a resume tried
        starts counting what the edge holds for it; a fresh session asked for hears
        only what the edge carries over to it (held for a failed resume) and after."""
        for action in actions:
            if isinstance(action, ResumeUpstream):
                self.held = False
            elif isinstance(action, AbortUpstream) and action.redial:
                self.heard, self.held = bool(self.held and action.after_loss), None

    def wire(self) -> dict[str, Any]:
        """The snapshot's part: whether the upstream session has heard audio."""
        return {HEARD: True} if self.heard else {}

    def restore(self, snap: Mapping[str, Any], resumed: Mapping[str, Any] | None) -> None:
        """After a move: the resumed upstream session heard what it had heard."""
        self.heard = resumed is not None and snap.get(HEARD) is True
