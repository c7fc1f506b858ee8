"""A duplex session as its model sees it (``SessionPort``): its settings, its events.

The settings the model reads (``duplex_port.py``), and every event the model emits:
journaled (``server_event_seq`` last, from 1) and written to whichever socket is
attached, or to none while detached (``duplex_session.py`` attaches them). Once the
journal overflows, one unjournaled ``session.resync_required`` says so and every event
goes out without a seq.
"""

from __future__ import annotations

import asyncio

from proxy.reference.duplex_config import SessionSettings
from proxy.reference.duplex_formats import InputDefaults, output_delta
from proxy.reference.journal import EventJournal, JournalOverflow
from proxy.reference.options import ReferenceOptions
from proxy.reference.outbound import Outbound
from proxy.reference.personaplex_frames import PersonaPlexFrames
from proxy.reference.wire import dumps, duplex_error, new_event_id


class JournaledPort:
    """Set up by ``DuplexSession``."""

    id: str
    options: ReferenceOptions
    settings: SessionSettings
    defaults: InputDefaults
    journal: EventJournal
    frames: PersonaPlexFrames | None
    outbound: Outbound | None
    _overflow_noticed: bool
    _loop: asyncio.AbstractEventLoop

    @property
    def modalities(self) -> list[object]:
        return self.settings.modalities

    @property
    def overlap_policy(self) -> str:
        return self.settings.overlap_policy

    @property
    def server_vad(self) -> bool:
        return self.settings.server_vad

    @property
    def vad_create_response(self) -> bool:
        td = self.settings.client.get("turn_detection")
        return not isinstance(td, dict) or td.get("create_response", True) is not False

    @property
    def auto_response(self) -> bool:
        return self.settings.auto_response

    @property
    def overlap_short_ack_ms(self) -> int:
        return self.settings.overlap_short_ack_ms

    @property
    def resumable(self) -> bool:
        return self.options.model_profile.session_resume

    def emit(self, event_type: str, fields: dict[str, object]) -> None:
        if self.frames is not None:
            if event_type == "input_audio_buffer.committed":
                self.frames.commit()  # the commit's unit goes to the model
            elif event_type == "input_audio_buffer.cleared":
                self.frames.clear()
        if event_type == "response.output_audio.delta":
            fields = output_delta(fields, self.defaults)  # the wheel's projection does it
        self._pump({"type": event_type, "event_id": new_event_id(), **fields})

    def emit_error(
        self, code: str, message: str, *, event_id: object = None, param: str | None = None
    ) -> None:
        """An engine-side error: journaled, unlike the transport errors the app sends."""
        self._pump(duplex_error(code, message, event_id=event_id, param=param))

    # ---- outbound ----

    def _pump(self, payload: dict[str, object]) -> None:
        if self.journal.overflowed:
            self._send(dumps(payload))
            return
        try:
            text = self.journal.record(payload, self._loop.time()).text
        except JournalOverflow:
            # Sticky: one unjournaled notice, then every event goes out without a seq.
            if not self._overflow_noticed:
                self._overflow_noticed = True
                self._send(dumps(self._resync("journal_overflow")))
            text = dumps(payload)
        self._send(text)

    def _send(self, text: str) -> None:
        if self.outbound is not None:
            self.outbound.send_text(text)

    def _resync(self, reason: str) -> dict[str, object]:
        return {
            "type": "session.resync_required",
            "event_id": new_event_id(),
            "session_id": self.id,
            "reason": reason,
        }
