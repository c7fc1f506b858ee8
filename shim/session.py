"""The emulation core shared by both emulated modes: input audio, VAD turns, barge-in.

Sans-I/O (DESIGN.md §2): ``handle(input) -> list[Action]``; no sockets, no clock.
Subclasses in ``shim/dialects/`` own what differs: how a user turn reaches the
upstream and how the upstream's output becomes GA events.

Barge-in (DESIGN.md §5) is a two-step decision, because the first 200 ms of
"uh-huh" and of "wait, stop" sound alike:

1. *hold*: as soon as the VAD starts speech while assistant audio is playing, the
   proxy tells the client ``input_audio_buffer.speech_started`` and stops
   forwarding assistant audio, keeping it (bounded) instead of dropping it;
2. *cut* once the overlapping speech holds ``min_barge_in_ms`` of voiced audio: the
   held audio is dropped, the response is cancelled (``turn_detected``) and the item
   truncated at what was played; or *resume* if the speech stops first (a
   backchannel): the held audio is sent and the response goes on untouched.
"""

from __future__ import annotations

import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from shim import wire
from shim.actions import (
    Action,
    AnalyzeAudio,
    CloseClient,
    ReportFault,
    SendClient,
    SendClientAudio,
)
from shim.audio import (
    AudioError,
    AudioFormat,
    Int16Array,
    StreamResampler,
    b64decode,
    decode_samples,
)
from shim.echo import EchoSuppressor
from shim.inputs import (
    ClientEvent,
    Input,
    Tick,
    UpstreamCheckpointed,
    UpstreamEvent,
    UpstreamLost,
    UpstreamReattached,
    VadWindow,
)
from shim.playback import ItemPlayback, PlaybackLedger
from shim.session_config import (
    ClientSessionConfig,
    SessionConfigError,
    apply_session_update,
)
from shim.vad_gate import WINDOW_MS, SpeechStarted, SpeechStopped, VadGate, VadParams

VAD_RATE = 16000

ClientHandler = Callable[[dict[str, Any], float], list["Action"]]


@dataclass(frozen=True, slots=True)
class ShimSettings:
    """Per-process knobs (from config); per-session ones come via session.update."""

    vad: VadParams = field(default_factory=VadParams)
    min_barge_in_ms: int = 800
    # Longest assistant audio held while deciding barge-in vs backchannel.
    max_hold_ms: int = 3000
    # Longest input kept for one user turn (bounded memory per session).
    max_turn_ms: int = 60_000
    echo_suppression: bool = True
    # Speech needed to *hold* the assistant's audio while it plays. Shorter than a
    # turn's min_speech_ms: a hold costs nothing if the speech turns out to be short
    # (the audio resumes), and it is what the listener hears as "it stopped".
    hold_min_speech_ms: int = 64


@dataclass
class Episode:
    """User speech that began while the assistant was speaking (not yet decided)."""

    item_id: str
    onset_ms: int
    voiced_ms: int = 0


@dataclass
class ActiveResponse:
    response_id: str
    item_id: str
    playback: ItemPlayback | None = None
    upstream_done: bool = False
    cancelled: bool = False
    held: list[Action] = field(default_factory=list)
    held_ms: float = 0.0
    # Input audio time (16 kHz samples) when the response began: speech that started
    # before it is the user's own turn going on, not an interruption.
    started_at_sample: int = 0


def _fmt_name(encoding: str) -> str:
    return "audio/pcm" if encoding == "pcm16" else "audio/pcm_f32le"


class EmulatedSession:
    """State and rules common to ``duplex_emulated`` and ``barge_in_emulated``."""

    mode = "emulated"
    # Announce every user turn (speech_started/stopped); False where the upstream
    # takes turns itself and the proxy only speaks up to interrupt.
    announce_turns = True

    def __init__(
        self,
        session_id: str,
        model: str,
        settings: ShimSettings,
        vad_enabled: bool = True,
    ) -> None:
        self.session_id = session_id
        self.model = model
        self.settings = settings
        self.config = ClientSessionConfig()
        self.vad_enabled = vad_enabled
        self.gate = VadGate(settings.vad)
        self.ledger = PlaybackLedger()
        self.echo = EchoSuppressor() if settings.echo_suppression else None
        self._to16 = StreamResampler(self.config.input_format.rate_hz, VAD_RATE, quality="MQ")
        self._counter = 0
        # 16 kHz input timeline: every sample the client sent, counted.
        self.in_samples = 0
        # Recent 16 kHz input, for prefix padding and the current turn.
        self._history: deque[Int16Array] = deque()
        self._history_start = 0
        self._history_len = 0
        self.turn_item: str | None = None  # user item of the turn in progress
        self.turn_start_ms = 0
        self.last_item_id: str | None = None
        self.episode: Episode | None = None
        self.response: ActiveResponse | None = None
        self._last_now = 0.0
        self._client_table = self.client_handlers()

    # ------------------------------------------------------------------ ids
    def new_id(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}_{self.session_id[-12:]}{self._counter:06d}"

    # ------------------------------------------------------------ dispatch
    def handle(self, inp: Input) -> list[Action]:
        """One input in, the actions it calls for out; never raises.

        An unexpected exception is a bug: the client gets a coded ``internal_error``
        naming the event, the edge a ``ReportFault`` to log, and the session goes on.
        """
        self._last_now = inp.now_ms
        try:
            return self._dispatch(inp)
        except Exception as exc:
            return self._fault(inp, exc)

    def _dispatch(self, inp: Input) -> list[Action]:
        if isinstance(inp, ClientEvent):
            return self.on_client(inp)
        if isinstance(inp, UpstreamEvent):
            return self.on_upstream(inp)
        if isinstance(inp, VadWindow):
            return self.on_vad(inp)
        if isinstance(inp, Tick):
            return self.on_tick(inp.now_ms)
        if isinstance(inp, UpstreamLost):
            return self.on_upstream_lost(inp)
        if isinstance(inp, UpstreamReattached):
            return self.on_upstream_reattached(inp)
        if isinstance(inp, UpstreamCheckpointed):
            return self.on_upstream_checkpointed(inp)
        raise TypeError(f"unknown input {inp!r}")

    def _fault(self, inp: Input, exc: Exception) -> list[Action]:
        event = getattr(inp, "event", None)
        kind = event.get("type") if isinstance(event, dict) else None
        event_type = kind if isinstance(kind, str) else None
        where = f"{type(inp).__name__} {event_type}" if event_type else type(inp).__name__
        trace = "".join(traceback.format_exception(exc))
        fault = ReportFault(type(inp).__name__, event_type, repr(exc), trace)
        ev = event if isinstance(inp, ClientEvent) else None
        return [self.err("internal_error", f"the proxy failed to handle {where}", ev), fault]

    # ------------------------------------------------------------ client
    def client_handlers(self) -> dict[str, ClientHandler]:
        """Client event type -> handler; a dialect adds its own to these."""
        return {
            "session.update": self.client_session_update,
            "input_audio_buffer.append": self.client_input_audio_buffer_append,
            "playback.ack": self.client_playback_ack,
            "conversation.item.truncate": self.client_conversation_item_truncate,
            "conversation.item.retrieve": self.client_conversation_item_retrieve,
        }

    def on_client(self, inp: ClientEvent) -> list[Action]:
        kind = inp.event.get("type")
        handler = self._client_table.get(kind) if isinstance(kind, str) else None
        if handler is None:
            return self.client_other(inp)
        return handler(inp.event, inp.now_ms)

    def client_other(self, inp: ClientEvent) -> list[Action]:
        """An event this mode does not interpret; each dialect relays or refuses it."""
        raise NotImplementedError

    def err(
        self, code: str, message: str, ev: dict[str, Any] | None = None, param: str | None = None
    ) -> SendClient:
        event_id = ev.get("event_id") if ev else None
        return SendClient(
            wire.error(
                code, message, event_id=event_id if isinstance(event_id, str) else None, param=param
            )
        )

    def client_session_update(self, ev: dict[str, Any], now: float) -> list[Action]:
        error = self.apply_update(ev)
        if error is not None:
            return [self.err(error.code, str(error), ev, error.param)]
        return self.session_updated(ev, now)

    def apply_update(self, ev: dict[str, Any]) -> SessionConfigError | None:
        """Apply a session.update locally; a rejected update changes nothing."""
        try:
            cfg = apply_session_update(self.config, ev, self.settings.vad)
        except SessionConfigError as exc:
            return exc
        if cfg.input_format.rate_hz != self.config.input_format.rate_hz:
            self._to16 = StreamResampler(cfg.input_format.rate_hz, VAD_RATE, quality="MQ")
        if cfg.turn.vad is not None:
            self.gate.update(cfg.turn.vad)
        elif self.gate.speaking:
            self.gate.reset()
        self.config = cfg
        return None

    def session_updated(self, ev: dict[str, Any], now: float) -> list[Action]:
        from shim.session_config import session_object

        return [
            SendClient(
                {
                    "type": "session.updated",
                    "session": session_object(self.session_id, self.model, self.config),
                }
            )
        ]

    def client_input_audio_buffer_append(self, ev: dict[str, Any], now: float) -> list[Action]:
        audio = ev.get("audio", ev.get("delta"))
        if not isinstance(audio, str):
            return [
                self.err(
                    "invalid_event",
                    "input_audio_buffer.append needs a base64 'audio' string",
                    ev,
                    "audio",
                )
            ]
        fmt = self.config.input_format
        try:
            raw = b64decode(audio)
            samples = decode_samples(raw, fmt)
        except AudioError as exc:
            return [self.err(exc.code, str(exc), ev, "audio")]
        if samples.size == 0:
            return [
                self.err("invalid_audio", "input_audio_buffer.append carries no audio", ev, "audio")
            ]
        out = self.forward_input(ev, raw, fmt, now)
        s16 = self._to16.process(samples)
        if s16.size:
            start = self.in_samples
            self._remember(s16)
            self.in_samples += int(s16.size)
            if self.vad_enabled and self.config.turn.vad is not None:
                clean = (
                    self.echo.process(s16, start)
                    if self.echo is not None
                    else s16.astype(np.float32) / 32768.0
                )
                out.append(AnalyzeAudio(samples=clean, start_sample=start))
        return out

    def forward_input(
        self, ev: dict[str, Any], raw: bytes, fmt: AudioFormat, now: float
    ) -> list[Action]:
        """Hook: the duplex relay forwards the client's audio upstream as it comes."""
        return []

    def client_playback_ack(self, ev: dict[str, Any], now: float) -> list[Action]:
        played = ev.get("played_ms")
        if isinstance(played, bool) or not isinstance(played, int | float):
            return [
                self.err(
                    "invalid_event", "playback.ack requires numeric played_ms", ev, "played_ms"
                )
            ]
        item = self._item_for(ev)
        if item is not None:
            item.ack(float(played))
        return self.after_playback_ack(ev, now)

    def after_playback_ack(self, ev: dict[str, Any], now: float) -> list[Action]:
        return []

    def _item_for(self, ev: dict[str, Any]) -> ItemPlayback | None:
        item_id = ev.get("item_id")
        if isinstance(item_id, str):
            return self.ledger.get(item_id)
        rid = ev.get("response_id")
        for item in reversed(self.ledger.items()):
            if rid is None or item.response_id == rid:
                return item
        return None

    def client_conversation_item_truncate(self, ev: dict[str, Any], now: float) -> list[Action]:
        item_id, end = ev.get("item_id"), ev.get("audio_end_ms")
        if not isinstance(item_id, str):
            return [
                self.err("invalid_event", "conversation.item.truncate needs item_id", ev, "item_id")
            ]
        if isinstance(end, bool) or not isinstance(end, int) or end < 0:
            return [
                self.err(
                    "invalid_event",
                    "audio_end_ms must be a non-negative integer",
                    ev,
                    "audio_end_ms",
                )
            ]
        item = self.ledger.get(item_id)
        if item is None:
            return [
                self.err("item_not_found", f"no assistant audio item {item_id!r}", ev, "item_id")
            ]
        if end > item.sent_ms + 0.5:
            return [
                self.err(
                    "invalid_value",
                    f"audio_end_ms {end} is beyond the {int(item.sent_ms)} ms of audio sent",
                    ev,
                    "audio_end_ms",
                )
            ]
        item.truncated_ms = end
        out: list[Action] = []
        resp = self.response
        live = resp is not None and not resp.cancelled and (not resp.upstream_done or resp.held)
        if resp is not None and live and resp.item_id == item_id:
            # Truncating the item still being produced ends its response too.
            out += self.cancel_response(now, reason="client_cancelled", truncate_at=end)
            return out
        return [SendClient(wire.truncated(item_id, end))]

    def client_conversation_item_retrieve(self, ev: dict[str, Any], now: float) -> list[Action]:
        """Assistant items the proxy played out are answered here, as heard."""
        item_id = ev.get("item_id")
        item = self.ledger.get(item_id) if isinstance(item_id, str) else None
        if item is None:
            return self.retrieve_elsewhere(ev)
        cut = item.truncated_ms
        transcript = item.transcript if cut is None else item.heard_transcript(float(cut))
        status = "completed" if cut is None else "incomplete"
        return [
            SendClient(
                {
                    "type": "conversation.item.retrieved",
                    "item": wire.assistant_item(item.item_id, status, transcript),
                }
            )
        ]

    def retrieve_elsewhere(self, ev: dict[str, Any]) -> list[Action]:
        item_id = ev.get("item_id")
        return [self.err("item_not_found", f"no conversation item {item_id!r}", ev, "item_id")]

    # ------------------------------------------------------------ audio memory
    def _remember(self, s16: Int16Array) -> None:
        self._history.append(s16)
        self._history_len += int(s16.size)
        keep = VAD_RATE * self.settings.max_turn_ms // 1000
        if self.turn_item is None and self.episode is None:
            keep = VAD_RATE * (self.settings.vad.prefix_padding_ms + 3000) // 1000
        while self._history and self._history_len - self._history[0].size >= keep:
            dropped = self._history.popleft()
            self._history_len -= int(dropped.size)
            self._history_start += int(dropped.size)

    def audio_since(self, start_ms: int, end_ms: int | None = None) -> Int16Array:
        """16 kHz input between two audio times (clamped to what is kept)."""
        if not self._history:
            return np.zeros(0, dtype=np.int16)
        data = np.concatenate(list(self._history))
        lo = max(0, start_ms * VAD_RATE // 1000 - self._history_start)
        hi = (
            data.size
            if end_ms is None
            else max(lo, end_ms * VAD_RATE // 1000 - self._history_start)
        )
        return data[lo:hi]

    def drop_audio_before(self, ms: int) -> None:
        """Forget input before ``ms`` (a committed or cleared buffer)."""
        cut = ms * VAD_RATE // 1000
        while self._history and self._history_start + self._history[0].size <= cut:
            dropped = self._history.popleft()
            self._history_len -= int(dropped.size)
            self._history_start += int(dropped.size)

    # ------------------------------------------------------------ VAD and turns
    def on_vad(self, win: VadWindow) -> list[Action]:
        td = self.config.turn
        if td.vad is None:
            return []
        out: list[Action] = []
        if self.episode is not None and win.prob >= td.vad.threshold:
            self.episode.voiced_ms += WINDOW_MS
        self._tune_gate(td.vad, win.now_ms)
        for event in self.gate.push(win.prob, win.end_sample):
            if isinstance(event, SpeechStarted):
                out += self._speech_started(event, win.now_ms)
            else:
                out += self._speech_stopped(event, win.now_ms)
        ep = self.episode
        if ep is not None and ep.voiced_ms >= self.settings.min_barge_in_ms:
            out += self._barge_in(win.now_ms)
        return out

    def _tune_gate(self, base: VadParams, now: float) -> None:
        """Quicker onsets while the assistant speaks (holds are cheap), else the turn's."""
        want = base
        if self.config.turn.interrupt_response and self.assistant_active(now):
            want = replace(
                base, min_speech_ms=min(base.min_speech_ms, self.settings.hold_min_speech_ms)
            )
        if self.gate.params != want:
            self.gate.update(want)

    def new_response(self, response_id: str, item_id: str) -> ActiveResponse:
        self.response = ActiveResponse(response_id, item_id, started_at_sample=self.in_samples)
        return self.response

    def assistant_active(self, now: float) -> bool:
        resp = self.response
        if resp is not None and not resp.cancelled and (not resp.upstream_done or resp.held):
            return True
        return self.ledger.playing(now) is not None

    def _speech_started(self, ev: SpeechStarted, now: float) -> list[Action]:
        td = self.config.turn
        assert td.vad is not None
        start_ms = self.gate.padded_start_ms(ev)
        resp = self.response
        onset = ev.audio_start_ms * VAD_RATE // 1000
        after_start = resp is None or onset >= resp.started_at_sample
        overlap = td.interrupt_response and after_start and self.assistant_active(now)
        if not overlap and not self.announce_turns:
            return []
        item_id = self.new_id("item")
        out: list[Action] = [SendClient(wire.speech_started(item_id, start_ms))]
        if overlap:
            voiced = max(0, ev.detected_ms - ev.audio_start_ms)
            self.episode = Episode(item_id=item_id, onset_ms=start_ms, voiced_ms=voiced)
            self.hold_output(now)
            return out
        self.turn_item = item_id
        self.turn_start_ms = start_ms
        return out + self.user_turn_started(now)

    def _speech_stopped(self, ev: SpeechStopped, now: float) -> list[Action]:
        out: list[Action] = []
        if self.episode is not None:
            # Overlapping speech that ended before it cut: a backchannel.
            item_id = self.episode.item_id
            self.episode = None
            out.append(SendClient(wire.speech_stopped(item_id, ev.audio_end_ms)))
            out += self.release_output(now)
            return out
        if self.turn_item is None:
            return out
        item_id = self.turn_item
        out.append(SendClient(wire.speech_stopped(item_id, ev.audio_end_ms)))
        out += self.commit_turn(item_id, self.turn_start_ms, ev.audio_end_ms, now)
        self.turn_item = None
        return out

    def _barge_in(self, now: float) -> list[Action]:
        ep = self.episode
        assert ep is not None
        self.episode = None
        out: list[Action] = []
        if self.response is not None and not self.response.cancelled:
            out += self.cancel_response(now, reason="turn_detected")
        self.turn_item = ep.item_id
        self.turn_start_ms = ep.onset_ms
        out += self.user_turn_started(now)
        return out

    def on_tick(self, now: float) -> list[Action]:
        out: list[Action] = []
        ep = self.episode
        resp = self.response
        if ep is not None and not self.assistant_active(now):
            # The assistant finished while the user was talking over its last words:
            # the speech is simply the next turn.
            self.episode = None
            self.turn_item, self.turn_start_ms = ep.item_id, ep.onset_ms
            out += self.user_turn_started(now)
        elif resp is not None and resp.held and resp.held_ms > self.settings.max_hold_ms:
            self.episode = None
            out += self.release_output(now)
        return out

    # ------------------------------------------------------------ output path
    def emit_audio(self, action: SendClientAudio, now: float) -> list[Action]:
        """Send (or hold, during an undecided overlap) one assistant audio delta."""
        resp = self.response
        if resp is None or resp.cancelled:
            return []
        if self.episode is not None:
            resp.held.append(action)
            resp.held_ms += action.n_samples * 1000.0 / action.rate_hz
            return []
        return [self._send_audio(action, now)]

    def _send_audio(self, action: SendClientAudio, now: float) -> SendClientAudio:
        resp = self.response
        assert resp is not None
        if resp.playback is None:
            resp.playback = self.ledger.start(resp.item_id, resp.response_id, action.rate_hz)
        start = resp.playback.add_audio(action.n_samples, now)
        if self.echo is not None and action.far16 is not None:
            # Where this audio will sound in the mic timeline, if the client plays it
            # as soon as its buffer reaches it.
            at = self.in_samples + int((start - now) * VAD_RATE / 1000)
            self.echo.add_far(action.far16, max(0, at))
        return action

    def emit_text(self, action: SendClient, delta: str) -> list[Action]:
        """Send (or hold) a transcript delta; the ledger learns it only once sent."""
        resp = self.response
        if resp is None or resp.cancelled:
            return []
        if self.episode is not None:
            resp.held.append(action)
            return []
        self._note_text(resp, delta)
        return [action]

    def _note_text(self, resp: ActiveResponse, delta: str) -> None:
        if resp.playback is None and delta:
            resp.playback = self.ledger.start(
                resp.item_id, resp.response_id, self.config.output_format.rate_hz
            )
        if resp.playback is not None:
            resp.playback.add_text(delta)

    def emit(self, action: Action) -> list[Action]:
        """Send now, or keep in order behind held audio while an overlap is undecided."""
        resp = self.response
        if self.episode is not None and resp is not None and resp.held:
            resp.held.append(action)
            return []
        return [action]

    def hold_output(self, now: float) -> None:
        """Stop forwarding assistant output; the client buffer drains meanwhile."""

    def release_output(self, now: float) -> list[Action]:
        resp = self.response
        if resp is None or not resp.held:
            return []
        held, resp.held, resp.held_ms = resp.held, [], 0.0
        out: list[Action] = []
        for action in held:
            if isinstance(action, SendClientAudio):
                out.append(self._send_audio(action, now))
                continue
            if isinstance(action, SendClient) and str(action.event.get("type", "")).endswith(
                "_transcript.delta"
            ):
                self._note_text(resp, str(action.event.get("delta") or ""))
            out.append(action)
        return out

    def close_response(
        self,
        resp: ActiveResponse,
        now: float,
        status: str,
        reason: str | None,
        truncate_at: int | None = None,
        full_text: str | None = None,
    ) -> list[Action]:
        """The events that end ``resp``; an early end truncates it at what was heard."""
        pb = resp.playback
        transcript = full_text if full_text is not None else (pb.transcript if pb else "")
        played: int | None = None
        if status != "completed" and pb is not None:
            played = truncate_at if truncate_at is not None else pb.audio_end_ms(now)
            pb.truncated_ms = played
            transcript = pb.heard_transcript(played)
        events = wire.response_end(resp.response_id, resp.item_id, status, transcript, reason)
        out: list[Action] = [SendClient(e) for e in events]
        if played is not None:
            out.append(SendClient(wire.truncated(resp.item_id, played)))
        return out

    def played_ms(self, now: float) -> int:
        resp = self.response
        if resp is None or resp.playback is None:
            return 0
        return resp.playback.audio_end_ms(now)

    # ------------------------------------------------------------ durable state
    @staticmethod
    def response_state(resp: ActiveResponse) -> dict[str, Any]:
        """A response as a snapshot keeps it: ids, audio sent, transcript sent."""
        return {
            "response_id": resp.response_id,
            "item_id": resp.item_id,
            "sent_ms": int(resp.playback.sent_ms) if resp.playback else 0,
            "transcript": resp.playback.transcript if resp.playback else "",
        }

    def open_response(self) -> ActiveResponse | None:
        """The response still being produced, as far as the snapshot is concerned."""
        resp = self.response
        if resp is not None and not resp.cancelled and not resp.upstream_done:
            return resp
        return None

    def snapshot(self) -> dict[str, Any]:
        """What another replica needs to carry the session on (JSON-able)."""
        cfg = self.config
        opened = self.open_response()
        open_response = self.response_state(opened) if opened is not None else None
        return {
            "counter": self._counter,
            "last_item_id": self.last_item_id,
            "input_format": [cfg.input_format.encoding, cfg.input_format.rate_hz],
            "output_format": [cfg.output_format.encoding, cfg.output_format.rate_hz],
            "turn_detection": cfg.turn.as_wire(),
            "instructions": cfg.instructions,
            "open_response": open_response,
        }

    def restore(self, snap: dict[str, Any]) -> list[Action]:
        """Carry on from ``snapshot()``; a response that was mid-stream ends here."""
        self._counter = int(snap.get("counter", 0))
        self.last_item_id = snap.get("last_item_id")
        update: dict[str, Any] = {
            "type": "session.update",
            "session": {
                "audio": {
                    "input": {
                        "format": {
                            "type": _fmt_name(snap["input_format"][0]),
                            "rate": snap["input_format"][1],
                        },
                        "turn_detection": snap.get("turn_detection"),
                    },
                    "output": {
                        "format": {
                            "type": _fmt_name(snap["output_format"][0]),
                            "rate": snap["output_format"][1],
                        }
                    },
                },
            },
        }
        if snap.get("instructions"):
            update["session"]["instructions"] = snap["instructions"]
        self.apply_update(update)
        if self.config.turn.vad is not None:
            # The VAD restarts with a fresh stream, whose time starts again at zero.
            self.gate.reset()
        opened = snap.get("open_response")
        if not opened:
            return []
        # Never silently: the response the lost upstream was producing ends here.
        rid, aid = opened["response_id"], opened["item_id"]
        item = wire.assistant_item(aid, "incomplete", opened.get("transcript", ""))
        return [
            SendClient(
                {
                    "type": "response.done",
                    "response": wire.response(
                        rid, "incomplete", [item], {"type": "incomplete", "reason": "upstream_lost"}
                    ),
                }
            )
        ]

    # ------------------------------------------------------------ hooks
    def user_turn_started(self, now: float) -> list[Action]:
        return []

    def commit_turn(self, item_id: str, start_ms: int, end_ms: int, now: float) -> list[Action]:
        raise NotImplementedError

    def cancel_response(
        self, now: float, reason: str, truncate_at: int | None = None
    ) -> list[Action]:
        raise NotImplementedError

    def on_upstream(self, inp: UpstreamEvent) -> list[Action]:
        raise NotImplementedError

    def on_upstream_lost(self, inp: UpstreamLost) -> list[Action]:
        return [CloseClient(1011, "upstream lost")]

    def on_upstream_reattached(self, inp: UpstreamReattached) -> list[Action]:
        return []

    def on_upstream_checkpointed(self, inp: UpstreamCheckpointed) -> list[Action]:
        return []

    def upstream_position(self) -> tuple[str, int] | None:
        """(upstream session id, seq) where the upstream journals its events: the seq
        up to which the session's state covers them (what may be acknowledged once
        checkpointed); else None."""
        return None
