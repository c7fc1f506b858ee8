"""A duplex session as the transport sees it: its attachment, resume, grace, settings.

Mirrors ``entrypoints/duplex/serving.py`` + ``session_attachment.py``
(``docs/fidelity.md``): the session outlives its socket.  Every event goes through
:meth:`DuplexSession.emit` (``duplex_journaled.py``), which journals it
(``server_event_seq`` last, from 1) and writes it to whichever socket is attached --
or to none while detached, when the model keeps talking into the journal for
``disconnect_grace_s``.
``session.created`` is the one unjournaled session event; transport errors,
``session.resumed``/``session.replaced`` and resume-time ``resync_required``
bypass the journal too.
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
import uuid
from collections.abc import Awaitable

from proxy.reference.duplex_config import ConfigError, SessionSettings
from proxy.reference.duplex_formats import InputDefaults
from proxy.reference.duplex_input import AppendDecoder
from proxy.reference.duplex_journaled import JournaledPort
from proxy.reference.duplex_model import DuplexModel
from proxy.reference.duplex_profile import capabilities, realtime_session_payload
from proxy.reference.duplex_registry import ResumeRefused, SessionRegistry, token_digest
from proxy.reference.duplex_turn_detection import names_turn_detection
from proxy.reference.journal import EventJournal, JournalGap
from proxy.reference.options import (
    FAULT_REPLAY_DROPS,
    FAULT_REPLAY_DUPLICATES,
    ReferenceOptions,
)
from proxy.reference.outbound import Outbound
from proxy.reference.personaplex_frames import PersonaPlexFrames
from proxy.reference.wire import duplex_error, new_event_id


class DuplexSession(JournaledPort):
    def __init__(
        self,
        *,
        registry: SessionRegistry[DuplexSession],
        kind: str,
        options: ReferenceOptions,
        reply_ms: int,
        settings: SessionSettings,
        defaults: InputDefaults,
    ) -> None:
        self.id = f"duplex-{uuid.uuid4().hex}"
        self.kind = kind
        self.options = options
        self.reply_ms = reply_ms
        self.settings = settings
        self.defaults = defaults
        self.registry = registry
        self.capabilities = capabilities(kind, options)
        self.journal = EventJournal(max_bytes=options.replay_max_bytes, ttl_s=options.replay_ttl_s)
        self.decoder = AppendDecoder()
        #: PersonaPlex's input buffer, when the model takes its input in units.
        self.frames = (
            PersonaPlexFrames()
            if options.profile == "personaplex" and options.strict("model_input_units")
            else None
        )
        self.model = DuplexModel(self)
        self.model.unanswered_items = settings.seeded_items  # engine_session.py, __post_init__
        self.outbound: Outbound | None = None
        self.generation = 0
        self.closed = False
        self._digest = b""
        self._overflow_noticed = False
        self._grace: asyncio.TimerHandle | None = None
        self._loop = asyncio.get_running_loop()
        registry.add(self)

    # ---- SessionPort for the model (the rest: duplex_journaled.py) ----

    def audio_turn(self) -> Awaitable[float]:
        return self.registry.gate.wait_turn(self)

    # ---- what the session says of itself ----

    def public(self) -> dict[str, object]:
        model = self.model
        active = model.response
        return self.settings.public(
            {
                "id": self.id,
                "state": "closed" if self.closed else "open",
                "turn_state": model.turn_state,
                "epoch": model.epoch,
                "turn_id": model.turn_id,
                "active_request_id": f"{self.id}-turn-{active.turn_id}" if active else None,
                "active_response_id": active.id if active else None,
                "active_response_turn_id": active.turn_id if active else None,
                "playback": model.playback,
                "capabilities": self.capabilities,
            }
        )

    def session_payload(self) -> dict[str, object]:
        return realtime_session_payload(self.public(), self.defaults)

    # ---- attachments ----

    def _attach(self, outbound: Outbound) -> str:
        token = secrets.token_urlsafe(32)
        self._digest = token_digest(token)
        self.generation += 1
        self.outbound = outbound
        outbound.set_on_drop(lambda: self.detach(outbound))
        if self._grace is not None:
            self._grace.cancel()
            self._grace = None
        return token

    def open(self, outbound: Outbound) -> None:
        """First attachment: session.created (unjournaled, with credentials), session.updated."""
        token = self._attach(outbound)
        payload = self.session_payload()
        created: dict[str, object] = {
            "type": "session.created",
            "event_id": new_event_id(),
            "session": payload,
        }
        if self.resumable:  # serving.py stamps credentials only on resumable sessions
            created.update(attachment_generation=self.generation, resume_token=token)
        outbound.send(created)
        self.emit("session.updated", {"session": payload})

    def resume(self, token: str, last_seq: int, outbound: Outbound) -> None:
        """Take the session over from ``outbound``; raises ResumeRefused with the reply frame."""
        if not self.resumable or not hmac.compare_digest(self._digest, token_digest(token)):
            raise ResumeRefused(
                duplex_error("invalid_resume_token", "Invalid duplex session resume token")
            )
        try:
            entries = self.journal.replay_after(last_seq, self._loop.time())
        except JournalGap:
            raise ResumeRefused(self._resync("journal_gap")) from None
        except ValueError as exc:
            raise ResumeRefused(duplex_error("session_resume_conflict", str(exc))) from None
        replaced, replaced_generation = self.outbound, self.generation
        new_token = self._attach(outbound)
        outbound.send(
            {
                "type": "session.resumed",
                "event_id": new_event_id(),
                "session_id": self.id,
                "session": self.public(),
                "attachment_generation": self.generation,
                "resume_token": new_token,
            }
        )
        texts = [entry.text for entry in entries]
        if self.options.has(FAULT_REPLAY_DUPLICATES):
            texts = [text for text in texts for _ in range(2)]
        if self.options.has(FAULT_REPLAY_DROPS) and texts:
            texts.pop(len(texts) // 2)
        for text in texts:
            outbound.send_text(text)
        if replaced is not None:
            replaced.set_on_drop(None)
            replaced.send(
                {
                    "type": "session.replaced",
                    "event_id": new_event_id(),
                    "session_id": self.id,
                    "attachment_generation": replaced_generation,
                }
            )
            replaced.close(1000, "session_replaced")

    def is_current(self, outbound: Outbound) -> bool:
        return self.outbound is outbound and not self.closed

    def detach(self, outbound: Outbound) -> None:
        """The socket went away: keep generating into the journal for the grace period."""
        if self.outbound is not outbound or self.closed:
            return
        self.outbound = None
        if not self.resumable:
            self.end()  # nothing can resume it: no grace
            return
        self._grace = self._loop.call_later(self.options.disconnect_grace_s, self.expire)

    def expire(self) -> None:
        if self.closed or self.outbound is not None:
            return
        self.emit("session.expired", {"session_id": self.id, "reason": "disconnect_grace_expired"})
        self.end()

    def close(self, reason: str) -> None:
        """``session.closed`` (journaled, delivered), then WS close 1000 with the reason."""
        if self.closed:
            return
        self.emit("session.closed", {"session_id": self.id, "reason": reason, "event": {}})
        if self.outbound is not None:
            self.outbound.close(1000, reason)
        self.end()

    def end(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._grace is not None:
            self._grace.cancel()
            self._grace = None
        self.registry.remove(self)
        self.model.cancel_tasks()

    # ---- envelope / settings ----

    def acknowledge(self, seq: int) -> None:
        self.journal.acknowledge(seq)

    def update_settings(self, patch: dict[str, object], event_id: object) -> None:
        try:
            self.settings.update(
                patch, audio_started=self.model.audio_started, locked=self.model.context_locked
            )
        except ConfigError as exc:
            self.emit_error(exc.code, str(exc), event_id=event_id)
            return
        if names_turn_detection(patch) and self.options.strict("vad_reset_on_update"):
            self.model.replace_detector()
        self.emit("session.updated", {"session": self.session_payload()})
