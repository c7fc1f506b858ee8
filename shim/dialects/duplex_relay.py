"""``barge_in_emulated``: relay a duplex upstream that cannot cut its own playback.

Models such as Nemotron VoiceChat (``supports_barge_in: false``) hear overlapping
speech but keep talking. The proxy relays the session and adds the missing piece:
its own VAD on the client's audio decides barge-in (see ``shim/session.py``), then
stops the response's audio at once, cancels it upstream with what the upstream
supports (``playback.ack`` of what was heard, ``response.cancel``) and tells the
client (``response.done`` cancelled / ``turn_detected``, ``conversation.item.truncated``).

Upstream turn-taking stays the upstream's: the proxy does not announce ordinary user
turns, only the ones that interrupt.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from shim import wire
from shim.actions import (
    AbortUpstream,
    Action,
    ForwardUpstream,
    SendClient,
    SendClientAudio,
    SendUpstream,
)
from shim.audio import (
    PCM16,
    AudioError,
    AudioFormat,
    StreamResampler,
    b64decode,
    b64encode,
    decode_samples,
    encode_samples,
)
from shim.inputs import ClientEvent, UpstreamEvent, UpstreamLost
from shim.session import VAD_RATE, EmulatedSession, ShimSettings

# Acknowledge upstream events in batches: every N, and at every response end.
ACK_EVERY = 16


class BargeInRelaySession(EmulatedSession):
    mode = "barge_in_emulated"
    announce_turns = False

    def __init__(
        self,
        session_id: str,
        model: str,
        settings: ShimSettings,
        upstream_capabilities: Mapping[str, Any] | None,
    ) -> None:
        super().__init__(session_id, model, settings)
        caps = upstream_capabilities or {}
        self.upstream_truncates = caps.get("supports_audio_truncate") is True
        self._rs_out: StreamResampler | None = None
        self._rs_far: StreamResampler | None = None
        self._cancelled_ids: set[str] = set()
        self._suppress_upstream_speech = False
        self._upstream_seq = 0
        self._acked_seq = 0
        # The client's last session.update as sent upstream, to restore on a fresh one.
        self._last_update: dict[str, Any] | None = None

    # ------------------------------------------------------------ client events
    def client_session_update(self, ev: dict[str, Any], now: float) -> list[Action]:
        out = super().client_session_update(ev, now)
        if out:
            return out  # the update was refused: nothing goes upstream
        # Turn detection is the proxy's job here; the upstream would refuse server_vad
        # without barge-in (its overlap policy must agree), so it is not forwarded.
        upstream = copy.deepcopy(ev)
        nested = upstream.get("session")
        session: dict[str, Any] = nested if isinstance(nested, dict) else upstream
        session.pop("turn_detection", None)
        audio = session.get("audio")
        audio_in = audio.get("input") if isinstance(audio, dict) else None
        if isinstance(audio_in, dict):
            audio_in.pop("turn_detection", None)
        self._last_update = upstream
        return [SendUpstream(upstream)]

    def session_updated(self, ev: dict[str, Any], now: float) -> list[Action]:
        return []  # the upstream answers session.updated itself

    def forward_input(
        self, ev: dict[str, Any], raw: bytes, fmt: AudioFormat, now: float
    ) -> list[Action]:
        return [SendUpstream(ev)]

    def after_playback_ack(self, ev: dict[str, Any], now: float) -> list[Action]:
        return [SendUpstream(ev)]

    def client_conversation_item_truncate(self, ev: dict[str, Any], now: float) -> list[Action]:
        out = super().client_conversation_item_truncate(ev, now)
        if any(isinstance(a, SendClient) and a.event.get("type") == "error" for a in out):
            return out
        item = self.ledger.get(str(ev.get("item_id")))
        if item is None:
            return out
        if self.upstream_truncates:
            return [*out, SendUpstream(ev)]
        # No truncate upstream: commit what was heard with a playback ack instead.
        return [
            *out,
            SendUpstream(self._heard_ack(item.item_id, item.response_id, int(ev["audio_end_ms"]))),
        ]

    def client_other(self, inp: ClientEvent) -> list[Action]:
        return [ForwardUpstream(inp.raw)]

    def retrieve_elsewhere(self, ev: dict[str, Any]) -> list[Action]:
        return [SendUpstream(ev)]  # user items and the like live upstream

    def snapshot(self) -> dict[str, Any]:
        return {**super().snapshot(), "upstream_update": self._last_update}

    def restore(self, snap: dict[str, Any]) -> list[Action]:
        update = snap.get("upstream_update")
        self._last_update = update if isinstance(update, dict) else None
        return super().restore(snap)

    @staticmethod
    def _heard_ack(item_id: str, response_id: str, played: int) -> dict[str, Any]:
        return {
            "type": "playback.ack",
            "played_ms": played,
            "committed_ms": played,
            "response_id": response_id,
            "item_id": item_id,
        }

    # ------------------------------------------------------------ turns
    def commit_turn(self, item_id: str, start_ms: int, end_ms: int, now: float) -> list[Action]:
        return []  # the upstream commits turns itself

    def cancel_response(
        self, now: float, reason: str, truncate_at: int | None = None
    ) -> list[Action]:
        resp = self.response
        assert resp is not None
        resp.cancelled = True
        resp.held, resp.held_ms = [], 0.0
        self._cancelled_ids.add(resp.response_id)
        self._suppress_upstream_speech = reason == "turn_detected"
        out = self.close_response(resp, now, "cancelled", reason, truncate_at)
        played = (resp.playback.truncated_ms or 0) if resp.playback is not None else 0
        rid, aid = resp.response_id, resp.item_id
        if not resp.upstream_done:
            out.append(SendUpstream(self._heard_ack(aid, rid, played)))
            out.append(SendUpstream({"type": "response.cancel", "response_id": rid}))
        return out

    # ------------------------------------------------------------ upstream events
    def on_upstream(self, inp: UpstreamEvent) -> list[Action]:
        ev = dict(inp.event)
        out: list[Action] = []
        seq = ev.pop("server_event_seq", None)
        if isinstance(seq, int):
            self._upstream_seq = max(self._upstream_seq, seq)
        kind = ev.get("type")
        rid = ev.get("response_id")
        if rid is None and isinstance(ev.get("response"), dict):
            rid = ev["response"].get("id")
        if isinstance(rid, str) and rid in self._cancelled_ids:
            out += self._maybe_ack(kind)
            return out  # the rest of a response the proxy already cut
        now = inp.now_ms
        if kind == "session.created":
            return out  # a fresh upstream session after a loss; the client has its own
        if kind == "response.created" and isinstance(rid, str):
            self.new_response(rid, f"item_{rid}")
            self._rs_out = self._rs_far = None
            out.append(SendClient(ev))
        elif kind == "response.output_audio.delta":
            out += self._audio(ev, now)
        elif kind == "response.output_audio_transcript.delta":
            delta = ev.get("delta")
            out += self.emit_text(SendClient(ev), delta if isinstance(delta, str) else "")
        elif kind in ("input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped"):
            if not self._suppress_upstream_speech:
                out += self.emit(SendClient(ev))
        elif kind == "input_audio_buffer.committed":
            self._suppress_upstream_speech = False
            out += self.emit(SendClient(ev))
        elif kind == "response.done":
            if self.response is not None and self.response.response_id == rid:
                self.response.upstream_done = True
            out += self.emit(SendClient(ev))
        else:
            out += self.emit(SendClient(ev))
        out += self._maybe_ack(kind)
        return out

    def _maybe_ack(self, kind: Any) -> list[Action]:
        if self._upstream_seq > self._acked_seq and (
            kind == "response.done" or self._upstream_seq - self._acked_seq >= ACK_EVERY
        ):
            self._acked_seq = self._upstream_seq
            return [
                SendUpstream({"type": "session.event_ack", "server_event_seq": self._upstream_seq})
            ]
        return []

    def _audio(self, ev: dict[str, Any], now: float) -> list[Action]:
        resp = self.response
        data = ev.get("delta")
        if resp is None or not isinstance(data, str):
            return [SendClient(ev)]
        if isinstance(ev.get("item_id"), str):
            resp.item_id = ev["item_id"]
        rate = ev.get("sample_rate_hz")
        rate = rate if isinstance(rate, int) and rate > 0 else self.config.output_format.rate_hz
        try:
            samples = decode_samples(b64decode(data), AudioFormat(PCM16, rate))
        except AudioError as exc:
            return [self.err("upstream_error", f"upstream sent undecodable audio: {exc}")]
        out_fmt = self.config.output_format
        if self._rs_out is None or self._rs_out.in_rate != rate:
            self._rs_out = StreamResampler(rate, out_fmt.rate_hz)
            self._rs_far = StreamResampler(rate, VAD_RATE, quality="QQ")
        assert self._rs_far is not None
        client = self._rs_out.process(samples)
        far = self._rs_far.process(samples) if self.echo is not None else None
        if client.size == 0:
            return []
        if rate != out_fmt.rate_hz or out_fmt.encoding != PCM16:
            ev["delta"] = b64encode(encode_samples(client, out_fmt))
            if "sample_rate_hz" in ev:
                ev["sample_rate_hz"] = out_fmt.rate_hz
        return self.emit_audio(SendClientAudio(ev, int(client.size), out_fmt.rate_hz, far), now)

    def on_upstream_lost(self, inp: UpstreamLost) -> list[Action]:
        out: list[Action] = []
        resp = self.response
        if resp is not None and not resp.cancelled and not resp.upstream_done:
            out += self.cancel_response(inp.now_ms, reason="upstream_lost")
            # Say it as it is: the response did not finish.
            for i, a in enumerate(out):
                if isinstance(a, SendClient) and a.event.get("type") == "response.done":
                    rid = resp.response_id
                    item = a.event["response"]["output"]
                    out[i] = SendClient(
                        {
                            "type": "response.done",
                            "response": wire.response(
                                rid,
                                "incomplete",
                                item,
                                {"type": "incomplete", "reason": "upstream_lost"},
                            ),
                        }
                    )
            out = [a for a in out if not isinstance(a, SendUpstream)]
        out.append(AbortUpstream(reason="upstream lost", redial=True))
        if self._last_update is not None:
            # The fresh upstream session gets the client's settings back; open-only
            # fields were given when it opened and cannot be updated live.
            restore = copy.deepcopy(self._last_update)
            nested = restore.get("session")
            session: dict[str, Any] = nested if isinstance(nested, dict) else restore
            for key in ("ref_audio", "model"):
                session.pop(key, None)
            out.append(SendUpstream(restore))
        return out
