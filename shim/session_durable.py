"""The emulated session's durable state: its snapshot, and carrying on from one.

What another replica needs to carry the session on, as the store keeps it: the typed
snapshot (``shim/snapshot.py``: the id counter, the session's settings, a response
still open), the native client's options (``shim/native_client.py``) and the playback
ledger's recent items (``shim/played_snapshot.py``). A response that was mid-stream at
the move ends, never silently. A dialect adds its own parts to these.
"""

from __future__ import annotations

from typing import Any

from shim import played_snapshot, wire
from shim.actions import Action
from shim.output import ActiveResponse, response_state
from shim.response_close import lost_response_done
from shim.session_parts import SessionParts
from shim.snapshot import SessionSnapshot


class DurableSession(SessionParts):
    """The parts of ``session_parts.py``, with their snapshot and its restore."""

    def open_response(self) -> ActiveResponse | None:
        """The response the client has not had all of (produced, or held): a move ends it."""
        resp = self.response
        return resp if resp is not None and resp.live else None

    def snapshot_state(self) -> SessionSnapshot:
        cfg = self.config
        opened = self.open_response()
        return SessionSnapshot(
            counter=self._counter,
            last_item_id=self.last_item_id,
            input_format=(cfg.input_format.encoding, cfg.input_format.rate_hz),
            output_format=(cfg.output_format.encoding, cfg.output_format.rate_hz),
            turn_detection=cfg.turn.as_wire(),
            instructions=cfg.instructions,
            open_response=response_state(opened) if opened is not None else None,
        )

    def snapshot(self) -> dict[str, Any]:
        """What another replica needs to carry the session on, as the store keeps it."""
        wired = {**self.snapshot_state().to_wire(), **self.native.to_wire()}
        return {**wired, **played_snapshot.wire(self.ledger)}

    def restore(self, snap: dict[str, Any]) -> list[Action]:
        """Carry on from ``snapshot()``; a response that was mid-stream ends here (a
        snapshot it cannot read: ``SnapshotError``, ``SnapshotVersionError``)."""
        self.native.restore(snap)
        return self.restore_state(SessionSnapshot.from_wire(snap))

    def restore_state(self, snap: SessionSnapshot) -> list[Action]:
        self._counter = snap.counter
        self.last_item_id = snap.last_item_id
        self.apply_update(snap.config_update())
        if self.config.turn.vad is not None:
            # The VAD restarts with a fresh stream, whose time starts again at zero.
            self.gate.reset()
        opened = snap.open_response
        if opened is None:
            return []
        # Never silently: the response the lost upstream was producing ends here.
        item = wire.assistant_item(opened.item_id, "incomplete", opened.transcript)
        return [lost_response_done(opened.response_id, [item])]

    def upstream_position(self) -> tuple[str, int] | None:
        """(upstream session id, seq) where the upstream journals its events: the seq
        up to which the session's state covers them (what may be acknowledged once
        checkpointed); else None."""
        return None
