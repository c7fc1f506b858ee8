"""An emulated session's client side: which connection is attached, what it is
sent, and the grace after it leaves.

Every event is stamped into the session's replay log (so a resume can replay it)
and counted, then sent if a client is attached. A new attachment replaces the old
one (which gets ``session.replaced``) and first gets what it missed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from proxy.client_io import ClientChannel
from proxy.client_limits import TOLD
from proxy.clock import now_ms
from proxy.emulated.held_ends import HeldEnds
from proxy.emulated.queue_items import Attach
from proxy.latency import TurnLatency
from proxy.metrics import Metrics
from shim.audio import AudioFormat
from shim.journal import Journal
from shim.native_client import native_done, native_error


class ClientSide:
    def __init__(
        self, session_id: str, journal: Journal, metrics: Metrics, mode: str, native: bool = False
    ) -> None:
        self.session_id = session_id
        # A vLLM-Omni client: the proxy's own errors in vLLM-Omni's envelope.
        self.native = native
        # Its response.done are the proxy's own (over a turn upstream); a relay's are
        # the upstream's, passed as it sent them (docs/fidelity.md).
        self.own_done = native and mode == "duplex_emulated"
        self.journal = journal
        self.metrics = metrics
        # Looked up once: a label lookup per event cost as much as the count.
        self._frames_out = metrics.frames.labels("upstream_to_client")
        self._bytes_out = metrics.bytes.labels("upstream_to_client")
        self.mode = mode
        self.latency = TurnLatency(metrics, mode)
        self.attached: Attach | None = None
        # When the session expires with no client attached.
        self.grace_deadline: float | None = None
        self._closers: set[asyncio.Task[None]] = set()
        # Holds what follows a response's end until the store has it (set by the runner).
        self.held: HeldEnds | None = None

    @property
    def client(self) -> ClientChannel | None:
        return self.attached.client if self.attached is not None else None

    def send(self, event: dict[str, Any]) -> None:
        if event.get("session_id", self.session_id) != self.session_id:
            # A duplex upstream's event names its own session: the client's is the proxy's
            # (its session.created said so), whichever upstream session serves it now.
            event["session_id"] = self.session_id
        if self.native:
            native_error(event)
        if self.own_done:
            native_done(event)
        text = self.journal.stamp(event, now_ms())
        self.latency.sent(event)
        if event.get("type") in TOLD and self.attached is not None:
            # The client's input clock reads what the session accepted, no more
            # (proxy/client_limits.py).
            self.attached.client.rate.clock.accepted(event.get("session"))
        held = self.held
        if event.get("type") == "response.done":
            self.metrics.responses.labels(self.mode, event["response"]["status"]).inc()
            details = event["response"].get("status_details") or {}
            if details.get("reason") == "turn_detected":
                self.metrics.barge_ins.labels(self.mode).inc()
            if held is not None and self.attached is not None:
                held.ended(self.journal.seq)  # (a client attached later: ``replaying``)
        if self.attached is not None:
            self._frames_out.inc()
            self._bytes_out.inc(len(text))
            if held is None or held.clear:
                client = self.attached.client
                # Written at once when nothing waits before it (no writer task wakeup).
                if not client.write_now(text):
                    client.send_text(text)
            else:
                send = partial(self.attached.client.send_text, text)
                held.send(self.journal.seq, send, len(text))

    def error(self, code: str, message: str, event_id: str | None = None) -> None:
        """An error for the attached client only: errors are not replayed."""
        if self.attached is not None:
            send = partial(self.attached.client.send_error, code, message, event_id)
            self.in_order(send, len(message))

    def in_order(self, send: Callable[[], object], size: int = 0) -> None:
        """``send`` (an event out of the replay log, ``size`` bytes) after what the
        client is owed."""
        if self.held is None or self.held.clear:
            send()
        else:
            self.held.send(self.journal.seq, send, size)

    def tell_replaced(self) -> None:
        """Another replica resumed the session: the client here is told so, after
        what it is owed."""
        if (attached := self.attached) is not None:
            ev = {"type": "session.replaced", "session_id": self.session_id}
            self.in_order(partial(attached.client.send_event, ev))

    def release(self, unsaved: bool = True) -> Attach | None:
        """The session stops here or moves: what is held goes out now (without
        ``unsaved``, only what the store holds: ``HeldEnds.release``); the attached."""
        if self.held is not None:
            self.held.release(unsaved)
        return self.attached

    async def settle(self, client: ClientChannel, code: int) -> None:
        """The proxy closes ``client`` (``ClientChannel.owed``): what it is owed first."""
        if self.held is not None and self.client is client:
            await self.held.settle(code)

    async def attach(self, attach: Attach, input_format: AudioFormat | None = None) -> None:
        """``input_format``: the session's, which the client's input clock starts at
        (a resumed session's may not be told again)."""
        replay: list[str] = []
        if attach.replay_after is not None:
            local = self.journal.after(attach.replay_after, now_ms())
            if local is None:
                # Trimmed meanwhile: a partial replay would lose events. The old
                # connection (if any) keeps the session.
                attach.client.send_error(
                    "session_resume_gap", "events after that seq are no longer kept"
                )
                await attach.client.close(1008, "resume gap")
                attach.done.set()
                return
            replay = local
        old = self.attached
        if old is not None:
            old.client.send_event({"type": "session.replaced", "session_id": self.session_id})
            self._closers.add(
                asyncio.get_running_loop().create_task(old.client.close(1000, "session_replaced"))
            )
            self._closers = {t for t in self._closers if not t.done()}
            old.done.set()
        self.attached = attach
        attach.client.owed = partial(self.settle, attach.client)  # before the proxy closes it
        self.grace_deadline = None
        clock = attach.client.rate.clock
        clock.for_client(self.native)  # the session's kind, whatever the resuming client said
        if input_format is not None:
            clock.input_format = input_format
        for event in attach.first_events:
            if event.get("type") in TOLD:
                clock.accepted(event.get("session"))
            attach.client.send_event(event)
        if self.held is not None:
            self.held.drop()  # the old client's: the replay has them
            if attach.replay_after is not None:
                self.held.replaying(attach.replay_after, self.journal.seq)
        first = self.journal.seq - len(replay) + 1
        for seq, text in enumerate(replay, first):
            if self.held is None or self.held.clear:
                attach.client.send_text(text)
            else:
                self.held.send(seq, partial(attach.client.send_text, text), len(text))

    def detach(self, client: ClientChannel, grace_s: float) -> bool:
        """The client left; False if it was not the attached one (already replaced)."""
        if self.attached is None or client is not self.attached.client:
            return False
        self.attached.done.set()
        self.attached = None
        if self.held is not None:
            self.held.drop()  # in the replay log, for the next attachment
        self.grace_deadline = time.monotonic() + grace_s
        return True

    def grace_over(self) -> bool:
        return self.grace_deadline is not None and time.monotonic() > self.grace_deadline
