"""How the barge-in relay handles the upstream's events, by type.

``screen`` checks an event's seq and drops what the client must not get (echoes
of the talk given to a fresh upstream session, answers to the proxy's own acks,
the rest of responses the proxy cut); then each handler takes the relay session
(as ``RelayUpstreamHost``, what the handlers need of it) and the event. Events
with no handler are relayed in order.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from functools import partial
from typing import Any, Protocol

from shim.actions import Action, NoteUpstreamError, SendClient, StandDown
from shim.assistant_audio import AssistantAudio
from shim.audio import AudioError, AudioFormat, b64decode, decode_samples
from shim.audio_formats import GA_PCM_RATE
from shim.dialects.relay_link import Seq, UpstreamLink
from shim.dialects.relay_own_updates import OwnUpdates
from shim.dialects.relay_reports import PlaybackReporter
from shim.dialects.relay_speech import UpstreamSpeech
from shim.dialects.relay_talk import ITEM_ECHOES, Talk
from shim.dialects.relay_wire import response_id
from shim.echo import EchoSuppressor
from shim.g711 import ALAW, G711_ENCODINGS, G711_RATE_HZ, ULAW
from shim.inputs import UpstreamEvent, UpstreamLost
from shim.output import ActiveResponse, AssistantOutput
from shim.overlap import OverlapMachine
from shim.playback import PlaybackLedger
from shim.session import EventHandler
from shim.session_config import ClientSessionConfig
from shim.turns import Turns
from shim.upstream_timeline import UpstreamTimeline

# vLLM-Omni's names of the G.711 it sends (its ``protocol/realtime/formats.py``).
_UPSTREAM_G711 = {"g711_ulaw": ULAW, "g711_alaw": ALAW}


class RelayUpstreamHost(Protocol):
    """What the upstream handlers need of the relay session (``duplex_relay.py``)."""

    link: UpstreamLink
    reports: PlaybackReporter
    talk: Talk
    cancelled_ids: deque[str]
    suppress_upstream_speech: bool
    own_updates: OwnUpdates
    native_client: bool
    upstream_speech: UpstreamSpeech
    upstream_timeline: UpstreamTimeline
    overlap: OverlapMachine
    config: ClientSessionConfig
    ledger: PlaybackLedger
    output: AssistantOutput
    assistant_audio: AssistantAudio
    echo: EchoSuppressor | None
    turns: Turns

    @property
    def response(self) -> ActiveResponse | None: ...

    def output_held(self) -> bool: ...

    def bind_upstream(self, event: Mapping[str, Any]) -> None: ...

    def new_response(self, response_id: str, item_id: str) -> ActiveResponse: ...

    def err(
        self, code: str, message: str, ev: dict[str, Any] | None = None, param: str | None = None
    ) -> SendClient: ...

    def on_upstream_lost(self, inp: UpstreamLost) -> list[Action]: ...


def screen(r: RelayUpstreamHost, inp: UpstreamEvent) -> dict[str, Any] | list[Action]:
    """The event to handle (without its seq), or what to do instead of handling it."""
    if r.link.replaced:
        return []  # the session carries on elsewhere
    ev = dict(inp.event)
    seq = ev.pop("server_event_seq", None)
    if isinstance(seq, int) and not isinstance(seq, bool):
        done, held = r.response is not None and r.response.upstream_done, r.output_held()
        verdict = r.link.accept(seq, held, r.reports.upstream_audio_ms, done)
        if verdict is Seq.NEW and not held:
            r.assistant_audio.mark()  # where the link's hold mark is
        if verdict is Seq.REPEAT:
            return []  # an upstream replay repeating what was handled already
        if verdict is Seq.GAP:
            # The upstream's journal numbers every event it sends: one went missing
            # (a faulty replay). Never silently: this upstream session is given up.
            r.link.token = None
            return r.on_upstream_lost(
                UpstreamLost(f"upstream skipped events before seq {seq}", inp.now_ms, False)
            )
    if inp.skipped:
        return []  # one the edge could not take: counted above, nothing to hand on
    if r.native_client:  # answers to the proxy's own opening and updates of a fresh session
        answered = r.own_updates.screen(ev)
        if answered is not None:
            return answered
    kind = ev.get("type")
    item = ev.get("item")
    if isinstance(item, dict) and kind in ITEM_ECHOES:
        if r.talk.on_item_event(str(kind), item, r.ledger):
            return []  # the talk so far, given to a fresh upstream: the client has it
    if kind == "playback.acknowledged" and r.reports.answers_own_ack(ev):
        return []  # the answer to an ack the proxy sent, not the client
    if kind == "error" and r.reports.refuses_own_ack(ev):
        # The client sent no such ack: a refusal of the proxy's is its own.
        err = ev["error"]
        return [NoteUpstreamError(err.get("code"), err.get("message"))]
    rid = response_id(ev)
    if isinstance(rid, str) and rid in r.cancelled_ids:
        return []  # the rest of a response the proxy already cut
    if kind == "conversation.item.done" and isinstance(item, dict):
        cut = r.ledger.get(str(item.get("id")))
        if cut is not None and cut.response_id in r.cancelled_ids:
            return []  # the proxy closed that item itself when it cut its response
    r.upstream_timeline.to_client(ev)  # its input ms, on the client's timeline
    return ev


def handlers(r: RelayUpstreamHost) -> dict[str, EventHandler]:
    return {
        # The edge reads these as a socket's first frame (UpstreamReattached); one
        # in the stream still names the upstream's own session.
        "session.created": partial(session, r),
        "session.resumed": partial(session, r),
        "session.replaced": partial(replaced, r),
        "session.resync_required": partial(resync_required, r),
        "response.created": partial(response_created, r),
        "response.output_audio.delta": partial(audio, r),
        "response.output_audio_transcript.delta": partial(transcript_delta, r),
        "response.output_audio.done": partial(audio_done, r),
        "input_audio_buffer.speech_started": partial(speech, r),
        "input_audio_buffer.speech_stopped": partial(speech, r),
        "input_audio_buffer.committed": partial(committed, r),
        "response.done": partial(response_done, r),
        "conversation.item.deleted": partial(item_deleted, r),
    }


def session(r: RelayUpstreamHost, ev: dict[str, Any], now: float) -> list[Action]:
    r.bind_upstream(ev)  # the client has the proxy's session, not this one
    return []


def replaced(r: RelayUpstreamHost, ev: dict[str, Any], now: float) -> list[Action]:
    # Only a proxy holds the upstream's resume token: another replica resumed
    # this session and its upstream session with it.
    r.link.replaced = True
    return [StandDown("the upstream session was resumed by another connection")]


def resync_required(r: RelayUpstreamHost, ev: dict[str, Any], now: float) -> list[Action]:
    # The upstream's journal can no longer replay (it overflowed): its session
    # cannot be resumed any more. The client's own journal is the proxy's.
    r.link.token = None
    return []


def response_created(r: RelayUpstreamHost, ev: dict[str, Any], now: float) -> list[Action]:
    rid = response_id(ev)
    if not isinstance(rid, str):
        return r.output.event(SendClient(ev))
    # What is held of the previous response (during an undecided overlap) goes out
    # first: replacing it must not lose its end, and it ends before the next begins.
    out = r.output.release(now, r.config.output_format.rate_hz)
    r.new_response(rid, f"item_{rid}")
    r.reports.new_response()
    r.assistant_audio.reset()
    # The user may still be speaking: then the answer is held as spoken over.
    return [*out, SendClient(ev), *r.turns.answer_began(now)]


def audio(r: RelayUpstreamHost, ev: dict[str, Any], now: float) -> list[Action]:
    resp = r.response
    data = ev.get("delta")
    if resp is None or not isinstance(data, str):
        return [SendClient(ev)]
    if isinstance(ev.get("item_id"), str):
        resp.item_id = ev["item_id"]
    rate = ev.get("sample_rate_hz")
    out_fmt = r.config.output_format
    # A native client's G.711 comes from the upstream as G.711, labelled so (vLLM-Omni
    # converts its output itself); GA clients' is asked for as PCM16 (shim/ga_upstream.py).
    label = ev.get("format")
    g711 = _UPSTREAM_G711.get(label.lower()) if isinstance(label, str) else None
    # Unlabelled audio is at the rate asked for: the client's, or GA's 24 kHz PCM16
    # where the client's is G.711 (shim/ga_upstream.py asks the upstream for PCM16).
    fallback = GA_PCM_RATE if out_fmt.encoding in G711_ENCODINGS else out_fmt.rate_hz
    fallback = G711_RATE_HZ if g711 is not None else fallback
    rate = rate if isinstance(rate, int) and rate > 0 else fallback
    try:
        if g711 is None:
            samples = r.assistant_audio.decode(data, rate)
        else:
            samples = decode_samples(b64decode(data), AudioFormat(g711, rate))
    except AudioError as exc:
        return [r.err("upstream_error", f"upstream sent undecodable audio: {exc}")]
    r.reports.upstream_audio_ms += samples.size * 1000.0 / rate
    as_sent = g711 == out_fmt.encoding and rate == out_fmt.rate_hz

    def event_for(delta: str | None) -> dict[str, Any]:
        if as_sent:
            return ev  # already the client's G.711, byte for byte
        if delta is not None:  # converted to the client's format
            ev["delta"] = delta
            if "sample_rate_hz" in ev:
                ev["sample_rate_hz"] = out_fmt.rate_hz
            if out_fmt.encoding in G711_ENCODINGS:
                ev.pop("format", None)  # the upstream's label no longer holds
        return ev

    action = r.assistant_audio.convert(
        samples, rate, out_fmt, r.echo is not None, event_for, reencode=False
    )
    return r.output.audio(action, now) if action is not None else []


def audio_done(r: RelayUpstreamHost, ev: dict[str, Any], now: float) -> list[Action]:
    """What the resampler still holds goes out before the audio's end: resampling to
    the client's rate must not cut the last milliseconds of an answer."""
    resp, out_fmt = r.response, r.config.output_format
    out: list[Action] = []
    if resp is not None and not resp.cancelled and response_id(ev) in (None, resp.response_id):
        keys = ("response_id", "item_id", "output_index", "content_index")
        delta: dict[str, Any] = {"type": "response.output_audio.delta"}
        delta |= {k: ev[k] for k in keys if k in ev} | {"sample_rate_hz": out_fmt.rate_hz}
        rest = r.assistant_audio.flush(out_fmt, lambda b64: {**delta, "delta": b64})
        out += r.output.audio(rest, now) if rest is not None else []
    return out + r.output.event(SendClient(ev))


def transcript_delta(r: RelayUpstreamHost, ev: dict[str, Any], now: float) -> list[Action]:
    delta = ev.get("delta")
    text = delta if isinstance(delta, str) else ""
    return r.output.text(SendClient(ev), text, r.config.output_format.rate_hz)


def speech(r: RelayUpstreamHost, ev: dict[str, Any], now: float) -> list[Action]:
    if r.suppress_upstream_speech:
        return []
    # Turn detection off: the proxy decides no barge-in, and the upstream's speech
    # events (a buffer's first append, its commit) are the client's as they come.
    playing = r.overlap.holding or (r.config.turn.vad is not None and r.output.active(now))
    out: list[Action] = []
    for relayed in r.upstream_speech.on_event(ev, playing):
        out += r.output.event(SendClient(relayed))
    return out


def committed(r: RelayUpstreamHost, ev: dict[str, Any], now: float) -> list[Action]:
    r.suppress_upstream_speech = False
    return r.output.event(SendClient(ev))


def response_done(r: RelayUpstreamHost, ev: dict[str, Any], now: float) -> list[Action]:
    if r.response is not None and r.response.response_id == response_id(ev):
        r.response.upstream_done = True
    return r.output.event(SendClient(ev))


def item_deleted(r: RelayUpstreamHost, ev: dict[str, Any], now: float) -> list[Action]:
    """A deleted assistant item is no longer the proxy's to answer a retrieve or a
    truncate for (the upstream refuses both); one still being played is kept."""
    iid, resp = ev.get("item_id"), r.response
    if isinstance(iid, str) and not (resp is not None and resp.live and resp.item_id == iid):
        r.ledger.forget(iid)
    r.talk.deleted(iid)
    return r.output.event(SendClient(ev))
