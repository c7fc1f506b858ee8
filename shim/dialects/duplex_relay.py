"""``barge_in_emulated``: relay a duplex upstream that cannot cut its own playback.

Models such as Nemotron VoiceChat (``supports_barge_in: false``) hear overlapping
speech but keep talking. The proxy relays the session and adds the missing piece:
its own VAD on the client's audio decides barge-in (``shim/overlap.py``), then
stops the response's audio at once, ends it upstream (``playback.ack`` of what was
heard, ``output_audio_buffer.clear``: ``relay_cut.py``) and tells the client
(``response.done`` cancelled / ``turn_detected``, ``conversation.item.truncated``).
Upstream turn-taking stays the upstream's: the proxy does not announce ordinary
user turns, only the ones that interrupt.

The upstream session is resumable (``shim/dialects/relay_link.py``). When its socket
drops, the relay asks to reattach it (``ResumeUpstream``), so the upstream replays
what followed and the response goes on; only when that fails does it end the
response ``incomplete`` and open a fresh one, which it gives the client's settings
and the conversation so far (``relay_talk.py``, ``relay_upstream_loss.py``). It
acknowledges upstream events (``session.event_ack``) only once the session store holds
the session past them (``UpstreamCheckpointed``): a replica that takes the session over
resumes the upstream from its snapshot, and the upstream must still have
everything after it. ``session.replaced`` from the upstream means another replica
did just that: this one stands down. Playback reports: ``relay_reports.py``; the
upstream's speech times, on the client's own input timeline: ``shim/upstream_timeline.py``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from shim import client_events, native_formats
from shim.actions import (
    Action,
    ForwardUpstream,
    SendClient,
    SendUpstream,
)
from shim.dialects import (
    relay_client,
    relay_cut,
    relay_snapshot,
    relay_upstream,
    relay_upstream_loss,
)
from shim.dialects.relay_kept_update import KeptSettings
from shim.dialects.relay_link import UpstreamLink
from shim.dialects.relay_own_updates import OwnUpdates
from shim.dialects.relay_reports import PlaybackReporter
from shim.dialects.relay_speech import UpstreamSpeech
from shim.dialects.relay_talk import Talk
from shim.dialects.relay_wire import upstream_format_refusal, upstream_settings
from shim.inputs import (
    ClientEvent,
    Input,
    UpstreamCheckpointed,
    UpstreamEvent,
    UpstreamLost,
    UpstreamReattached,
)
from shim.native_turns import turn_refusal
from shim.output import ActiveResponse
from shim.overlap import Overlap, Step
from shim.response_close import close_response
from shim.session import EmulatedSession, EventHandler, ShimSettings
from shim.session_config import NATIVE_CONFIG
from shim.snapshot import SessionSnapshot
from shim.upstream_timeline import UpstreamTimeline

# Responses the proxy cut whose remaining upstream events it still drops.
CANCELLED_KEPT = 32


class BargeInRelaySession(KeptSettings, EmulatedSession):
    mode = "barge_in_emulated"
    announce_turns = False
    # A native client hears the upstream's own answers to its playback reports.
    answers_reports = False
    native_client = True  # its session is read as vLLM-Omni reads it
    timeline_follows_handle = True  # what it sends upstream goes as it is answered

    def __init__(
        self,
        session_id: str,
        model: str,
        settings: ShimSettings,
        upstream_capabilities: Mapping[str, Any] | None,
    ) -> None:
        caps = upstream_capabilities or {}
        self.upstream_truncates = caps.get("supports_audio_truncate") is True
        self.link = UpstreamLink()
        self.reports = PlaybackReporter()
        self.talk = Talk()
        self.cancelled_ids: deque[str] = deque(maxlen=CANCELLED_KEPT)
        self.suppress_upstream_speech = False
        self.upstream_speech = UpstreamSpeech()
        self.own_updates = OwnUpdates()  # answers to the proxy's own updates
        # Where the audio the upstream got lies on the client's timeline.
        self.upstream_timeline = UpstreamTimeline()
        super().__init__(session_id, model, settings)
        if self.native_client:
            # vLLM-Omni's, but for turn detection: the proxy's VAD until the client
            # declares its own (docs/fidelity.md, "Known gaps").
            self.config = replace(NATIVE_CONFIG, turn=self.config.turn)

    def bind_upstream(self, event: Mapping[str, Any]) -> None:
        """Learn the upstream session from its ``session.created`` / ``session.resumed``."""
        self.own_updates.bound(event)
        if self.link.bind(event):
            # It has seen no ack, nor any item played so far.
            self.reports.new_upstream_session(item.item_id for item in self.ledger.items())

    def upstream_position(self) -> tuple[str, int] | None:
        if self.link.id is None:
            return None
        return self.link.id, self.durable()[0]

    def output_held(self) -> bool:
        """Some of the response's output is held back from the client right now."""
        return self.response is not None and bool(self.response.held)

    def durable(self) -> tuple[int, float]:
        """The upstream seq (and audio ms) a move goes on from."""
        return self.link.durable(self.output_held(), self.reports.upstream_audio_ms)

    # ------------------------------------------------------------ client events
    def client_handlers(self) -> dict[str, EventHandler]:
        return {
            **super().client_handlers(),
            "input_audio_buffer.append": self._client_audio,
            **dict.fromkeys(relay_client.ACK_NAMES, self._client_playback_ack),
            "conversation.item.truncate": self._client_truncate,
        }

    def client_other(self, inp: ClientEvent) -> list[Action]:
        # A transparent relay never rejects what it does not interpret.
        return [ForwardUpstream(inp.raw)]

    def client_session_update(self, ev: dict[str, Any], now: float) -> list[Action]:
        if upstream_format_refusal(ev) is not None or turn_refusal(ev) is not None:
            # Audio formats and turn detection vLLM-Omni refuses are its to refuse, in
            # its own words (GA's G.711 names among them): the update goes there,
            # unapplied here.
            refused = upstream_settings(ev)
            self.upstream_timeline.unapplied(refused)  # nor its turn detection there
            return [SendUpstream(refused)]
        cannot = native_formats.proxy_refusal(ev)
        if cannot is not None:  # in the proxy's words: vLLM-Omni would take it
            return [self.err(native_formats.PROXY_CANNOT_SERVE, cannot[0], ev, cannot[1])]
        # Read as vLLM-Omni reads it, so the proxy applies what the upstream applies.
        error = self.apply_update(native_formats.as_the_proxy_reads(ev))
        if error is not None:  # nothing goes upstream: neither side takes any of it
            return [self.err(error.code, str(error), ev, error.param)]
        # The upstream answers session.updated itself; turn detection goes along (its
        # turns are its own; the proxy's VAD decides only barge-ins).
        sent = upstream_settings(ev)
        self.last_update = sent
        return [SendUpstream(sent), *self.turns.detection_changed(now)]

    def _client_audio(self, ev: dict[str, Any], now: float) -> list[Action]:
        start = self.history.end
        out = relay_client.audio(self, ev, now)
        self.upstream_timeline.sent(start, self.history.end)  # all of it goes upstream
        return out

    def _client_playback_ack(self, ev: dict[str, Any], now: float) -> list[Action]:
        return relay_client.playback_ack(self, ev, now)

    def _client_truncate(self, ev: dict[str, Any], now: float) -> list[Action]:
        return relay_client.truncate(self, ev, now)

    def client_retrieve(self, ev: dict[str, Any], now: float) -> list[Action]:
        found = client_events.retrieve(self, ev)
        return found if found is not None else [SendUpstream(ev)]  # user items live upstream

    # ------------------------------------------------------------ turns
    def commit_turn(self, item_id: str, start_ms: int, end_ms: int, now: float) -> list[Action]:
        return []  # the upstream commits turns itself

    def cancel_response(
        self, now: float, reason: str, truncate_at: int | None = None
    ) -> list[Action]:
        resp = self.response
        assert resp is not None
        told_done = resp.told_done
        resp.cancelled = True
        resp.drop_held()
        self.cancelled_ids.append(resp.response_id)
        self.suppress_upstream_speech = reason == "turn_detected"
        out = close_response(resp, now, "cancelled", reason, truncate_at, None, told_done)
        played = (resp.playback.truncated_ms or 0) if resp.playback is not None else 0
        rid, aid = resp.response_id, resp.item_id
        if resp.playback is not None:
            self.talk.heard(aid, resp.playback.heard_transcript(played))
        if not resp.upstream_done or (
            # Generated in full but still playing, as far as the upstream knows.
            self.reports.acks_decide_turns and not self.reports.end_reported
        ):
            out += relay_cut.cut(self.reports, self.cancelled_ids, aid, rid, played)
        self.reports.end_reported = True
        return out

    def overlap_ended(self, step: Step, now: float) -> list[Action]:
        if step.outcome is Overlap.CUT:
            self.upstream_speech.drop()
        elif step.outcome is Overlap.TURN:
            return [SendClient(ev) for ev in self.upstream_speech.flush(user_speaking=True)]
        return []

    def on_tick(self, now: float) -> list[Action]:
        out = super().on_tick(now)
        if self.upstream_speech.held and not self.overlap.holding and not self.output.active(now):
            speaking = self.turns.user_speaking()
            out += [SendClient(ev) for ev in self.upstream_speech.flush(speaking)]
        resp, reports = self.response, self.reports
        if (
            resp is None
            or reports.client_acks
            or not reports.proxy_acked  # the upstream goes by generation, not acks
            or reports.end_reported
            or resp.cancelled
            or not resp.upstream_done
            or resp.held
            or (resp.playback is not None and resp.playback.playing(now))
        ):
            return out
        # Played out (by the ledger's estimate): say so, so that it hands the turn back.
        played = reports.played_in_full()
        if played is not None:
            out.append(SendUpstream(reports.heard_ack(resp.item_id, resp.response_id, played)))
        return out

    # ------------------------------------------------------------ upstream events
    def upstream_handlers(self) -> dict[str, EventHandler]:
        """Upstream event type -> handler; every other event is relayed in order."""
        return relay_upstream.handlers(self)

    def upstream_other(self, ev: dict[str, Any], now: float) -> list[Action]:
        return self.output.event(SendClient(ev))

    def on_upstream(self, inp: UpstreamEvent) -> list[Action]:
        screened = relay_upstream.screen(self, inp)
        if isinstance(screened, list):
            return screened
        return super().on_upstream(UpstreamEvent(screened, inp.raw, inp.now_ms))

    def handle(self, inp: Input) -> list[Action]:
        actions = super().handle(inp)
        if self.timeline_follows_handle:  # a fresh upstream session counts from zero
            self.upstream_timeline.follow(actions)
        return actions

    def on_upstream_checkpointed(self, inp: UpstreamCheckpointed) -> list[Action]:
        seq = self.link.checkpointed(inp.session_id, inp.seq)
        if seq is None:
            return []
        return [SendUpstream({"type": "session.event_ack", "server_event_seq": seq})]

    def on_upstream_reattached(self, inp: UpstreamReattached) -> list[Action]:
        return relay_upstream_loss.reattached(self, inp)

    def on_upstream_lost(self, inp: UpstreamLost) -> list[Action]:
        return relay_upstream_loss.lost(self, inp)

    # ------------------------------------------------------------ durable state
    def open_response(self) -> ActiveResponse | None:
        resp = self.response
        if resp is not None and not resp.cancelled and self.link.held_open(self.output_held()):
            return resp  # as of the hold mark, which is what a move goes on from
        # Else only while produced: one the upstream finished is carried by
        # ``_playing_out`` (``shim/dialects/relay_snapshot.py``).
        return resp if resp is not None and resp.producing else None

    def snapshot(self) -> dict[str, Any]:
        return {**super().snapshot(), **self.upstream_timeline.wire()}

    def snapshot_state(self) -> SessionSnapshot:
        return replace(super().snapshot_state(), relay=relay_snapshot.relay_state(self))

    def restore(
        self, snap: dict[str, Any], resumed: Mapping[str, Any] | None = None, now: float = 0.0
    ) -> list[Action]:
        """Carry on from ``snapshot()``.

        ``resumed`` is the upstream's ``session.resumed`` when the snapshot's upstream
        session itself came back: the upstream replays its events after the snapshot's
        seq, so a response that was mid-stream goes on. Otherwise (a fresh upstream
        session) it ends here, ``incomplete``.
        """
        out = relay_snapshot.restore(self, SessionSnapshot.from_wire(snap), resumed, now)
        self.upstream_timeline.restore(snap, resumed)
        return out
