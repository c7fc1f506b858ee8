"""``barge_in_emulated``: relay a duplex upstream that cannot cut its own playback.

Models such as Nemotron VoiceChat (``supports_barge_in: false``) hear overlapping
speech but keep talking. The proxy relays the session and adds the missing piece:
its own VAD on the client's audio decides barge-in (see ``shim/session.py``), then
stops the response's audio at once, cancels it upstream with what the upstream
supports (``playback.ack`` of what was heard, ``response.cancel``) and tells the
client (``response.done`` cancelled / ``turn_detected``, ``conversation.item.truncated``).

Upstream turn-taking stays the upstream's: the proxy does not announce ordinary user
turns, only the ones that interrupt.

The upstream session is resumable (vLLM-Omni journals its events): the relay keeps
its id, resume token and the last upstream ``server_event_seq`` it handled, in the
snapshot too. When the upstream socket drops, it asks to reattach that session
(``ResumeUpstream``), so the upstream replays what followed and the response goes
on; only when that fails does it end the response ``incomplete`` and open a fresh
one, which it gives the client's settings and the conversation so far (text items,
the assistant's as heard). It acknowledges upstream events (``session.event_ack``)
only once the session store holds the session past them (``UpstreamCheckpointed``):
a replica that takes the session over resumes the upstream from its snapshot, and
the upstream must still have everything after it. ``session.replaced`` from the upstream means
another replica did just that: this one stands down.

The upstream learns what was played from ``playback.ack`` (vLLM-Omni's ack-only
turn ownership: once it has seen an ack, the assistant holds the turn until its
audio is acknowledged as played). A client that sends its own acks has them
forwarded. For one that does not, once the proxy itself has acknowledged anything
(what was heard of a response it cut), it acknowledges each later response in full
when its playback ends by the ledger's estimate, so the upstream never waits for
acks that no one will send.
"""

from __future__ import annotations

import copy
import math
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from shim import wire
from shim.actions import (
    AbortUpstream,
    Action,
    ForwardUpstream,
    ResumeUpstream,
    SendClient,
    SendClientAudio,
    SendUpstream,
    StandDown,
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
from shim.inputs import (
    ClientEvent,
    UpstreamCheckpointed,
    UpstreamEvent,
    UpstreamLost,
    UpstreamReattached,
)
from shim.session import VAD_RATE, ActiveResponse, EmulatedSession, ShimSettings

# Responses the proxy cut whose remaining upstream events it still drops.
CANCELLED_KEPT = 32
# Conversation items (as text) kept to give a fresh upstream session the talk so far.
HISTORY_KEPT = 64
# Resumes of the upstream session in a row, with no new upstream event in between,
# before the proxy gives up on it and opens a fresh one.
MAX_UPSTREAM_RESUMES = 3


UpstreamHandler = Callable[[dict[str, Any], float], list[Action]]

_ITEM_ECHOES = ("conversation.item.added", "conversation.item.created", "conversation.item.done")


def _response_id(ev: Mapping[str, Any]) -> Any:
    rid = ev.get("response_id")
    if rid is None and isinstance(ev.get("response"), dict):
        rid = ev["response"].get("id")
    return rid


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
        self._cancelled_ids: deque[str] = deque(maxlen=CANCELLED_KEPT)
        self._suppress_upstream_speech = False
        # The upstream session: its id, its resume token (None: it cannot be resumed),
        # the last of its events handled and the last acknowledged.
        self.upstream_id: str | None = None
        self.upstream_token: str | None = None
        self._upstream_seq = 0
        self._acked_seq = 0
        # The upstream session was taken over by another connection.
        self._replaced = False
        # The client's last session.update as sent upstream, to restore on a fresh one.
        self._last_update: dict[str, Any] | None = None
        # Playback reports: the client acks itself; the proxy has sent an ack; the
        # current response's audio as the upstream sent it (ms); its end was reported.
        self._client_acks = False
        self._proxy_acked = False
        self._upstream_audio_ms = 0.0
        self._end_reported = False
        # The conversation so far, as text (item id -> role, text), oldest first; and
        # the items being given to a fresh upstream session, whose echoes are dropped.
        self._talk: dict[str, tuple[str, str]] = {}
        self._restoring: set[str] = set()
        # (upstream seq, audio ms, response generated in full) just before the first
        # event held from the client.
        self._hold_mark: tuple[int, float, bool] | None = None
        # Resumes of the upstream session since its last new event.
        self._resumes_in_a_row = 0
        # (item id, played ms) of playback acks the proxy sent: their answers are its own.
        self._own_acks: deque[tuple[str, int]] = deque(maxlen=CANCELLED_KEPT)
        self._upstream_table = self.upstream_handlers()

    def bind_upstream(self, event: Mapping[str, Any]) -> None:
        """Learn the upstream session from its ``session.created`` / ``session.resumed``."""
        session = event.get("session")
        sid = event.get("session_id")
        if not isinstance(sid, str) and isinstance(session, dict):
            sid = session.get("id")
        token = event.get("resume_token")
        sid = sid if isinstance(sid, str) else ""  # unnamed: acknowledged, never resumed
        if event.get("type") == "session.created" or sid != self.upstream_id:
            # A new upstream session: its events count from the start again, and it
            # has seen no playback ack yet.
            self._upstream_seq = self._acked_seq = 0
            self._hold_mark = None
            self._proxy_acked = False
        self.upstream_id = sid
        self.upstream_token = token if isinstance(token, str) and sid else None

    def upstream_position(self) -> tuple[str, int] | None:
        if self.upstream_id is None:
            return None
        return self.upstream_id, self._durable()[0]

    def _resumable(self) -> bool:
        return bool(self.upstream_id) and self.upstream_token is not None

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
        self._client_acks = True
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
        # A transparent relay never rejects what it does not interpret.
        return [ForwardUpstream(inp.raw)]

    def retrieve_elsewhere(self, ev: dict[str, Any]) -> list[Action]:
        return [SendUpstream(ev)]  # user items and the like live upstream

    def snapshot(self) -> dict[str, Any]:
        upstream = None
        seq, audio_ms = self._durable()
        if self.upstream_id is not None:
            upstream = {"id": self.upstream_id, "token": self.upstream_token, "seq": seq}
        return {
            **super().snapshot(),
            "upstream_update": self._last_update,
            "upstream": upstream,
            "cancelled": list(self._cancelled_ids),
            "history": [[iid, role, text] for iid, (role, text) in self._talk.items()],
            "restoring": sorted(self._restoring),
            "suppress_upstream_speech": self._suppress_upstream_speech,
            "playback_reports": {
                "client_acks": self._client_acks,
                "proxy_acked": self._proxy_acked,
                "upstream_audio_ms": audio_ms,
                "end_reported": self._end_reported,
                # A response generated in full whose playback end is still to report.
                "playing": self._playing_out(),
            },
        }

    def _held_open(self) -> bool:
        """Output is held and the response was still being produced when it began to
        be: its end may be among the held events."""
        return self._holding() and self._hold_mark is not None and not self._hold_mark[2]

    def open_response(self) -> ActiveResponse | None:
        resp = self.response
        if resp is not None and not resp.cancelled and self._held_open():
            return resp  # as of the hold mark, which is what a move goes on from
        return super().open_response()

    def _playing_out(self) -> dict[str, Any] | None:
        resp = self.response
        if resp is None or resp.cancelled or not resp.upstream_done or self._end_reported:
            return None
        if self._held_open():
            return None  # still open as of the hold mark
        return self.response_state(resp)

    @staticmethod
    def upstream_binding(snap: Mapping[str, Any]) -> tuple[str, str, int] | None:
        """(id, resume token, seq) of the upstream session a snapshot can resume."""
        up = snap.get("upstream")
        if not isinstance(up, dict):
            return None
        sid, token, seq = up.get("id"), up.get("token"), up.get("seq")
        if sid and isinstance(sid, str) and isinstance(token, str) and isinstance(seq, int):
            return sid, token, seq
        return None

    def restore(
        self, snap: dict[str, Any], resumed: Mapping[str, Any] | None = None, now: float = 0.0
    ) -> list[Action]:
        """Carry on from ``snapshot()``.

        ``resumed`` is the upstream's ``session.resumed`` when the snapshot's upstream
        session itself came back: the upstream replays its events after the snapshot's
        seq, so a response that was mid-stream goes on. Otherwise (a fresh upstream
        session) it ends here, ``incomplete``.
        """
        update = snap.get("upstream_update")
        self._last_update = update if isinstance(update, dict) else None
        self._cancelled_ids.extend(str(rid) for rid in snap.get("cancelled") or ())
        for iid, role, text in snap.get("history") or ():
            self._talk[str(iid)] = (str(role), str(text))
        self._restoring.update(str(iid) for iid in snap.get("restoring") or ())
        binding = self.upstream_binding(snap)
        if resumed is None or binding is None:
            return super().restore(snap)
        self._suppress_upstream_speech = snap.get("suppress_upstream_speech") is True
        reports = snap.get("playback_reports") or {}
        self._client_acks = reports.get("client_acks") is True
        self._proxy_acked = reports.get("proxy_acked") is True
        self._upstream_audio_ms = float(reports.get("upstream_audio_ms") or 0.0)
        self._end_reported = reports.get("end_reported") is True
        self.upstream_id, self.upstream_token, self._upstream_seq = binding
        self._acked_seq = 0
        self.bind_upstream(resumed)
        opened = snap.get("open_response")
        playing = reports.get("playing")
        out = super().restore({**snap, "open_response": None})
        if isinstance(opened, dict):
            self._carry_on(opened, now, upstream_done=False)
        elif isinstance(playing, dict):
            # Its end is reported at the next tick: a client that reconnected has
            # played what it had, as far as anyone can tell.
            self._carry_on(playing, now, upstream_done=True)
        return out

    def _carry_on(self, taken: Mapping[str, Any], now: float, upstream_done: bool) -> None:
        """The response the snapshot was taken in, carried on after the move."""
        resp = self.new_response(str(taken["response_id"]), str(taken["item_id"]))
        resp.started_at_sample = 0
        resp.upstream_done = upstream_done
        sent_ms = float(taken.get("sent_ms") or 0)
        text = str(taken.get("transcript") or "")
        if sent_ms <= 0 and not text:
            return
        # What was sent before the move: the client is taken to have heard it (its
        # playback.ack, if it sends them, says better).
        rate = self.config.output_format.rate_hz
        pb = self.ledger.start(resp.item_id, resp.response_id, rate)
        pb.sent_samples = int(sent_ms * rate / 1000)
        pb.first_sent_ms, pb.play_end_ms = now - sent_ms, now
        pb.transcript = text
        if text:
            pb.marks.append((sent_ms, len(text)))
        resp.playback = pb

    def _heard_ack(self, item_id: str, response_id: str, played: int) -> dict[str, Any]:
        self._proxy_acked = True
        self._own_acks.append((item_id, played))
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
        self._cancelled_ids.append(resp.response_id)
        self._suppress_upstream_speech = reason == "turn_detected"
        out = self.close_response(resp, now, "cancelled", reason, truncate_at)
        played = (resp.playback.truncated_ms or 0) if resp.playback is not None else 0
        rid, aid = resp.response_id, resp.item_id
        if aid in self._talk and resp.playback is not None:
            self._talk[aid] = ("assistant", resp.playback.heard_transcript(played))
        if not resp.upstream_done:
            out.append(SendUpstream(self._heard_ack(aid, rid, played)))
            out.append(SendUpstream({"type": "response.cancel", "response_id": rid}))
        elif self._acks_decide_turns() and not self._end_reported:
            # Generated in full but still playing, as far as the upstream knows: what
            # was heard, then stop its playback (response.cancel refuses a response
            # that is complete).
            out.append(SendUpstream(self._heard_ack(aid, rid, played)))
            out.append(SendUpstream({"type": "output_audio_buffer.clear", "response_id": rid}))
        self._end_reported = True
        return out

    def _acks_decide_turns(self) -> bool:
        return self._proxy_acked or self._client_acks

    def on_tick(self, now: float) -> list[Action]:
        out = super().on_tick(now)
        resp = self.response
        if (
            resp is None
            or self._client_acks
            or not self._proxy_acked  # the upstream goes by generation, not acks
            or self._end_reported
            or resp.cancelled
            or not resp.upstream_done
            or resp.held
            or (resp.playback is not None and resp.playback.playing(now))
        ):
            return out
        # Played out (by the ledger's estimate): say so, in the upstream's own
        # measure of what it sent, so that it hands the turn back.
        self._end_reported = True
        if self._upstream_audio_ms > 0:
            played = math.ceil(self._upstream_audio_ms - 1e-6)
            out.append(SendUpstream(self._heard_ack(resp.item_id, resp.response_id, played)))
        return out

    # ------------------------------------------------------------ upstream events
    def on_upstream(self, inp: UpstreamEvent) -> list[Action]:
        if self._replaced:
            return []  # the session carries on elsewhere
        ev = dict(inp.event)
        seq = ev.pop("server_event_seq", None)
        if isinstance(seq, int) and not isinstance(seq, bool):
            if seq <= self._upstream_seq:
                return []  # an upstream replay repeating what was handled already
            if self._upstream_seq and seq != self._upstream_seq + 1:
                # The upstream's journal numbers every event it sends: one went missing
                # (a faulty replay). Never silently: this upstream session is given up.
                self.upstream_token = None
                return self.on_upstream_lost(
                    UpstreamLost(f"upstream skipped events before seq {seq}", inp.now_ms, False)
                )
            if not self._holding():
                # Were this event held, a move would have the upstream replay from here.
                done = self.response is not None and self.response.upstream_done
                self._hold_mark = (seq - 1, self._upstream_audio_ms, done)
            self._upstream_seq = seq
            self._resumes_in_a_row = 0
        return self._upstream_event(ev, inp.now_ms)

    def _holding(self) -> bool:
        return self.response is not None and bool(self.response.held)

    def _durable(self) -> tuple[int, float]:
        """The upstream seq (and audio ms) a move goes on from: before any event the
        client has not been sent yet (held during an undecided overlap)."""
        if self._holding() and self._hold_mark is not None:
            return self._hold_mark[0], self._hold_mark[1]
        return self._upstream_seq, self._upstream_audio_ms

    def _upstream_event(self, ev: dict[str, Any], now: float) -> list[Action]:
        out: list[Action] = []
        kind = ev.get("type")
        if kind in ("session.created", "session.resumed"):
            # The edge reads these as a socket's first frame (UpstreamReattached); one in
            # the stream still names the upstream's own session. The client has the
            # proxy's.
            self.bind_upstream(ev)
            return out
        if kind == "session.replaced":
            # Only a proxy holds the upstream's resume token: another replica resumed
            # this session and its upstream session with it.
            self._replaced = True
            return [StandDown("the upstream session was resumed by another connection")]
        if kind == "session.resync_required":
            # The upstream's journal can no longer replay (it overflowed): its session
            # cannot be resumed any more. The client's own journal is the proxy's.
            self.upstream_token = None
            return out
        item = ev.get("item")
        if isinstance(item, dict) and kind in _ITEM_ECHOES:
            iid = item.get("id")
            if iid in self._restoring:
                if kind == "conversation.item.done":
                    self._restoring.discard(iid)
                return out  # the talk so far, given to a fresh upstream: the client has it
            if kind == "conversation.item.done":
                self._remember_item(item)
        if kind == "playback.acknowledged" and self._answers_own_ack(ev):
            return out  # the answer to an ack the proxy sent, not the client
        rid = _response_id(ev)
        if isinstance(rid, str) and rid in self._cancelled_ids:
            return out  # the rest of a response the proxy already cut
        handler = self._upstream_table.get(kind) if isinstance(kind, str) else None
        return handler(ev, now) if handler is not None else self.emit(SendClient(ev))

    def upstream_handlers(self) -> dict[str, UpstreamHandler]:
        """Upstream event type -> handler; every other event is relayed in order."""
        return {
            "response.created": self._up_response_created,
            "response.output_audio.delta": self._audio,
            "response.output_audio_transcript.delta": self._up_transcript_delta,
            "input_audio_buffer.speech_started": self._up_speech,
            "input_audio_buffer.speech_stopped": self._up_speech,
            "input_audio_buffer.committed": self._up_committed,
            "response.done": self._up_response_done,
        }

    def _up_response_created(self, ev: dict[str, Any], now: float) -> list[Action]:
        rid = _response_id(ev)
        if not isinstance(rid, str):
            return self.emit(SendClient(ev))
        self.new_response(rid, f"item_{rid}")
        self._upstream_audio_ms, self._end_reported = 0.0, False
        self._rs_out = self._rs_far = None
        return [SendClient(ev)]

    def _up_transcript_delta(self, ev: dict[str, Any], now: float) -> list[Action]:
        delta = ev.get("delta")
        return self.emit_text(SendClient(ev), delta if isinstance(delta, str) else "")

    def _up_speech(self, ev: dict[str, Any], now: float) -> list[Action]:
        if self._suppress_upstream_speech:
            return []
        return self.emit(SendClient(ev))

    def _up_committed(self, ev: dict[str, Any], now: float) -> list[Action]:
        self._suppress_upstream_speech = False
        return self.emit(SendClient(ev))

    def _up_response_done(self, ev: dict[str, Any], now: float) -> list[Action]:
        rid = _response_id(ev)
        if self.response is not None and self.response.response_id == rid:
            self.response.upstream_done = True
        return self.emit(SendClient(ev))

    def _answers_own_ack(self, ev: Mapping[str, Any]) -> bool:
        inner = ev.get("event")
        src: Mapping[str, Any] = inner if isinstance(inner, dict) else ev
        item_id, played = src.get("item_id"), src.get("played_ms")
        if not isinstance(item_id, str) or not isinstance(played, int):
            return False
        if (item_id, played) in self._own_acks:
            self._own_acks.remove((item_id, played))
            return True
        return False

    def on_upstream_checkpointed(self, inp: UpstreamCheckpointed) -> list[Action]:
        seq = min(inp.seq, self._upstream_seq)
        if inp.session_id != self.upstream_id or seq <= self._acked_seq or self._replaced:
            return []
        self._acked_seq = seq
        return [SendUpstream({"type": "session.event_ack", "server_event_seq": seq})]

    def on_upstream_reattached(self, inp: UpstreamReattached) -> list[Action]:
        self.bind_upstream(inp.event)
        if inp.event.get("type") != "session.created":
            return []  # its own session back: it has the conversation
        return self._give_history()

    def _remember_item(self, item: Mapping[str, Any]) -> None:
        """Keep a finished conversation item as text (what was heard, for the assistant)."""
        iid, role = item.get("id"), item.get("role")
        if not isinstance(iid, str) or role not in ("user", "assistant", "system"):
            return
        texts: list[str] = []
        for part in item.get("content") or ():
            if isinstance(part, dict):
                text = part.get("text") if isinstance(part.get("text"), str) else None
                text = text or part.get("transcript")
                if isinstance(text, str) and text:
                    texts.append(text)
        pb = self.ledger.get(iid)
        if role == "assistant" and pb is not None and pb.truncated_ms is not None:
            texts = [pb.heard_transcript(pb.truncated_ms)]
        text = " ".join(texts).strip()
        if not text:
            return
        self._talk[iid] = (str(role), text)
        while len(self._talk) > HISTORY_KEPT:
            self._talk.pop(next(iter(self._talk)))

    def _give_history(self) -> list[Action]:
        """The conversation so far, for a fresh upstream session (as text items)."""
        out: list[Action] = []
        for iid, (role, text) in self._talk.items():
            kind = "output_text" if role == "assistant" else "input_text"
            self._restoring.add(iid)
            item: dict[str, Any] = {"id": iid, "type": "message", "role": role}
            item["content"] = [{"type": kind, "text": text}]
            out.append(SendUpstream({"type": "conversation.item.create", "item": item}))
        return out

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
        self._upstream_audio_ms += samples.size * 1000.0 / rate
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
        if self._replaced:
            return []  # standing down: the session carries on elsewhere
        if inp.resume and self._resumable() and self._resumes_in_a_row < MAX_UPSTREAM_RESUMES:
            # Its own session back, if the upstream still has it: nothing is lost.
            assert self.upstream_id is not None and self.upstream_token is not None
            self._resumes_in_a_row += 1
            return [ResumeUpstream(self.upstream_id, self.upstream_token, self._upstream_seq)]
        self.upstream_id = self.upstream_token = None
        self._resumes_in_a_row = 0
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
        out.append(AbortUpstream(reason="upstream lost", redial=True, after_loss=True))
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
