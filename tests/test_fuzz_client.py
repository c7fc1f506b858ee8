"""Fuzzing the client side: every client event type, valid and broken, in every mode.

Through real WebSockets, against the proxy in each mode over its reference backend
(passthrough over ``duplex``, barge_in_emulated over ``duplex-no-barge-in``,
duplex_emulated over ``turn``). Each hypothesis example opens a session, sends a few
frames drawn from: valid events of every type, the same with a field replaced by any
JSON value or dropped, a wrong ``type``, an unknown type, truncated JSON, huge events,
deeply nested JSON (deeper than ``max_json_depth``: ``invalid_event``), binary frames,
bad base64 audio. After every frame a ``session.heartbeat`` must be answered, and at the
end a valid ``session.update``; then the session is closed and the proxy must hold
nothing of it any more (no client session, no live session, the ``sessions_active``
gauge at zero, no task left on its loop). What docs/protocol.md says each kind of bad
frame gets is checked: a frame that is not a JSON object with a string ``type`` (or a
binary frame) gets ``invalid_event``; an unknown type gets a coded error; bad base64
audio gets a coded error; every error carries a code and none is ``internal_error`` (the
proxy's own fault).

Bounded: ``tests/fuzz_servers.py`` picks a derandomized profile of a few dozen examples
per mode; ``HYPOTHESIS_HUNT=1`` explores many more, at random.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import partial
from typing import Any

import aiohttp
import orjson
import pybase64
import pytest
from hypothesis import given
from hypothesis import strategies as st

from proxy.reference.options import ReferenceOptions
from tests.fuzz_servers import (
    STEP_TIMEOUT_S,
    ProxyUnderTest,
    fuzz_settings,
    fuzz_timeout,
    proxy_thread,
    run_bounded,
    servers_thread,
)
from tests.servers import proxy_config, reference, ws_url

MODES = {
    "passthrough": "duplex",
    "barge_in_emulated": "duplex-no-barge-in",
    "duplex_emulated": "turn",
}
MAX_FRAME_BYTES = 2 * 1024 * 1024
MAX_DEPTH = 64  # [server] max_json_depth
SILENCE_20MS = pybase64.b64encode(b"\0\0" * 480).decode()

# One valid instance of every client event type the proxy or an upstream dialect knows
# (docs/protocol.md; vLLM-Omni's duplex additions). Events that end the session
# (session.close and its aliases) are the end of an example, never a step.
TEMPLATES: dict[str, dict[str, Any]] = {
    "session.update": {
        "session": {
            "type": "realtime",
            "instructions": "be brief",
            "audio": {
                "input": {
                    "format": {"type": "audio/pcm", "rate": 24000},
                    "turn_detection": {
                        "type": "server_vad",
                        "threshold": 0.5,
                        "silence_duration_ms": 500,
                    },
                }
            },
        }
    },
    "input_audio_buffer.append": {"audio": SILENCE_20MS},
    "input_audio_buffer.commit": {},
    "input_audio_buffer.clear": {},
    "response.create": {"response": {"instructions": "say hi"}},
    "response.cancel": {},
    "conversation.item.create": {
        "item": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "hi"}],
        }
    },
    "conversation.item.retrieve": {"item_id": "item_x"},
    "conversation.item.truncate": {"item_id": "item_x", "content_index": 0, "audio_end_ms": 10},
    "conversation.item.delete": {"item_id": "item_x"},
    "output_audio_buffer.clear": {},
    "playback.ack": {"item_id": "item_x", "played_ms": 100},
    "audio.playback_ack": {"played_ms": 100},
    "session.event_ack": {"server_event_seq": 1},
    "session.heartbeat": {},
    "session.resume": {
        "session_id": "sess_x",
        "resume_token": "t",
        "last_received_server_event_seq": 0,
    },
    "input.commit": {},
    "input.cancel": {},
    "barge_in": {},
    "turn.signal": {"event": "barge_in"},
    "input.text.append": {"text": "hi"},
}
CLOSERS = ("session.close", "close", "close_session")
BAD_BASE64 = ["%%%", "AAE", "AAEC", "====", "A", "éé", "AAAA====AAAA", "AA\nAA", ""]


class Frame:
    """One frame to send, what it is, and what the protocol promises for it: ``expect``
    is "invalid_event" (that code), "error" (some coded error) or "any" (an error or an
    answer). A plain class, not a dataclass, so that hypothesis prints a failing example
    through ``__repr__`` (short) rather than field by field (huge frames whole)."""

    def __init__(
        self, label: str, text: str | None = None, binary: bytes | None = None, expect: str = "any"
    ) -> None:
        self.label, self.text, self.binary, self.expect = label, text, binary, expect

    def __repr__(self) -> str:  # hypothesis prints the failing example: keep it readable
        body = self.text if self.text is not None else repr(self.binary)
        if body is not None and len(body) > 300:
            body = body[:300] + f"...({len(body)} chars)"
        return f"Frame({self.label}: {body})"

    @property
    def is_heartbeat(self) -> bool:
        # A refused heartbeat (invalid_event) gets no ack.
        return (
            self.expect != "invalid_event"
            and self.text is not None
            and _type_of(self.text) == "session.heartbeat"
        )


def _type_of(text: str) -> str | None:
    try:
        event = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    kind = event.get("type") if isinstance(event, dict) else None
    return kind if isinstance(kind, str) and kind else None


def _text_frame(label: str, text: str, expect: str = "any") -> Frame:
    if _type_of(text) is None:
        expect = "invalid_event"  # not a JSON object with a string type (docs/protocol.md)
    return Frame(label, text=text, expect=expect)


def _event(kind: str, fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, **fields}


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
kinds = st.sampled_from(sorted(TEMPLATES))


@st.composite
def valid(draw: st.DrawFn) -> Frame:
    kind = draw(kinds)
    return _text_frame(f"valid {kind}", json.dumps(_event(kind, TEMPLATES[kind])))


@st.composite
def field_replaced(draw: st.DrawFn) -> Frame:
    kind = draw(kinds)
    fields = dict(TEMPLATES[kind])
    key = draw(st.sampled_from([*fields, "extra"]) if fields else st.just("extra"))
    fields[key] = draw(json_values)
    return _text_frame(f"{kind}.{key} replaced", json.dumps(_event(kind, fields)))


@st.composite
def field_dropped(draw: st.DrawFn) -> Frame:
    kind = draw(kinds.filter(lambda k: bool(TEMPLATES[k])))
    fields = dict(TEMPLATES[kind])
    del fields[draw(st.sampled_from(sorted(fields)))]
    return _text_frame(f"{kind} missing a field", json.dumps(_event(kind, fields)))


@st.composite
def wrong_type(draw: st.DrawFn) -> Frame:
    kind = draw(kinds)
    bad = draw(json_values.filter(lambda v: not isinstance(v, str)) | st.just(""))
    return _text_frame(f"{kind} with type {bad!r}", json.dumps({**TEMPLATES[kind], "type": bad}))


known = set(TEMPLATES) | set(CLOSERS)


@st.composite
def unknown_type(draw: st.DrawFn) -> Frame:
    kind = draw(st.text(min_size=1, max_size=20).filter(lambda k: k not in known))
    event = {"type": kind, **draw(st.dictionaries(st.text(max_size=6), json_values, max_size=2))}
    event["type"] = kind
    return _text_frame(f"unknown type {kind!r}", json.dumps(event), expect="error")


@st.composite
def truncated(draw: st.DrawFn) -> Frame:
    kind = draw(kinds)
    text = json.dumps(_event(kind, TEMPLATES[kind]))
    cut = draw(st.integers(min_value=0, max_value=len(text) - 1))
    return _text_frame(f"{kind} cut at {cut}", text[:cut])


@st.composite
def huge(draw: st.DrawFn) -> Frame:
    kind = draw(kinds)
    size = draw(st.integers(min_value=100_000, max_value=MAX_FRAME_BYTES - 10_000))
    if draw(st.booleans()):
        event = _event(kind, {**TEMPLATES[kind], "pad": "x" * size})
        return _text_frame(f"{kind} padded to {size} bytes", json.dumps(event))
    # A huge append of real (silent) audio, up to ~3 s at 24 kHz.
    pcm = b"\0\0" * min(size // 2, 72_000)
    audio = pybase64.b64encode(pcm).decode()
    return _text_frame(
        f"append of {len(pcm)} bytes",
        json.dumps({"type": "input_audio_buffer.append", "audio": audio}),
    )


@st.composite
def deep(draw: st.DrawFn) -> Frame:
    kind = draw(kinds)
    # Deeper than [server] max_json_depth (the event object is one level) is
    # invalid_event, and so is deeper than orjson reads (1024).
    depth = draw(st.sampled_from([10, MAX_DEPTH - 1, MAX_DEPTH, 100, 300, 1023, 1024, 2000]))
    key = draw(
        st.sampled_from([*TEMPLATES[kind], "extra"]) if TEMPLATES[kind] else st.just("extra")
    )
    nested = draw(st.sampled_from(["[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth]))
    text = json.dumps(_event(kind, {**TEMPLATES[kind], key: "@@DEEP@@"}))
    expect = "invalid_event" if depth + 1 > MAX_DEPTH else "any"
    label = f"{kind}.{key} nested {depth} deep"
    return _text_frame(label, text.replace('"@@DEEP@@"', nested), expect=expect)


@st.composite
def bad_base64(draw: st.DrawFn) -> Frame:
    audio = draw(st.sampled_from(BAD_BASE64) | st.text(max_size=16).filter(_not_pcm16_base64))
    text = json.dumps({"type": "input_audio_buffer.append", "audio": audio})
    return _text_frame(f"append with audio {audio!r}", text, expect="error")


def _not_pcm16_base64(text: str) -> bool:
    try:
        raw = pybase64.b64decode(text, validate=True)
    except ValueError:
        return True
    return not raw or len(raw) % 2 == 1


printable = st.characters(exclude_categories=["Cs"])  # a str frame must encode as UTF-8
garbage_text = st.text(printable, max_size=40).map(lambda t: _text_frame("raw text", t))
binary = st.binary(max_size=64).map(
    lambda b: Frame("binary frame", binary=b, expect="invalid_event")
)

frames = st.one_of(
    valid(),
    field_replaced(),
    field_dropped(),
    wrong_type(),
    unknown_type(),
    truncated(),
    huge(),
    deep(),
    bad_base64(),
    garbage_text,
    binary,
)


# ---------------------------------------------------------------------- servers


def _native(mode: str) -> dict[str, str]:
    """A GA client over a duplex upstream is emulated; passthrough is for native clients."""
    return {"duplex": "1"} if mode == "passthrough" else {}


class Stack:
    def __init__(self, proxy: ProxyUnderTest, baseline: list[str], faults_before: float) -> None:
        self.proxy, self.baseline, self.faults_before = proxy, baseline, faults_before

    def __repr__(self) -> str:
        return f"Stack({self.proxy.base})"


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    kinds_up = list(MODES.values())
    # Deployed for the sessions the examples open (several may be in their grace at once).
    options = ReferenceOptions(max_sessions=64)
    backends = (partial(reference, k, reply_ms=300, options=options) for k in kinds_up)
    with servers_thread(*backends) as urls:
        cfg = proxy_config(
            dict(zip(MODES, urls, strict=True)),
            server={
                "max_frame_bytes": MAX_FRAME_BYTES,
                "max_json_depth": MAX_DEPTH,
                "log_level": "critical",
            },
            store={"disconnect_grace_s": 0.3},
        )
        with proxy_thread(cfg) as proxy:
            # One clean session per mode first, with audio: what stays alive after it
            # (the process-wide VAD runner) is the baseline, not a leak.
            pcm = pybase64.b64encode(b"\0\0" * 4800).decode()
            audio = json.dumps(_event("input_audio_buffer.append", {"audio": pcm}))
            for mode in MODES:
                run_bounded(_session(proxy.base, mode, [Frame("warm-up", text=audio)]), 30)
            census = proxy.settled([], within_s=3)
            yield Stack(proxy, census["tasks"], proxy.shim_faults())


# ---------------------------------------------------------------------- one example


class SessionBroke(AssertionError):
    pass


async def _session(base: str, mode: str, steps: list[Frame], ending: str = "close") -> list[str]:
    """Open a session in ``mode``, send ``steps`` (each followed by a heartbeat that
    must be answered), check the session still takes a valid update, end it; returns
    the error codes seen."""
    codes: list[str] = []
    acks_wanted = 0
    acks = 0
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(ws_url(base, model=mode, **_native(mode)), max_msg_size=0) as ws,
    ):

        async def recv(where: str) -> dict[str, Any]:
            msg = await ws.receive(timeout=STEP_TIMEOUT_S)
            if msg.type != aiohttp.WSMsgType.TEXT:
                raise SessionBroke(f"socket ended {where}: {msg.type.name} code {ws.close_code}")
            event: dict[str, Any] = json.loads(msg.data)
            if event.get("type") == "error":
                err = event.get("error") or {}
                code = err.get("code")
                assert isinstance(code, str) and code, f"error without a code {where}: {event}"
                assert code != "internal_error", f"proxy fault {where}: {event}"
                codes.append(code)
            return event

        created = await recv("before session.created")
        assert created["type"] == "session.created", created
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        for n, step in enumerate(steps):
            where = f"after step {n} {step!r}"
            if step.binary is not None:
                await ws.send_bytes(step.binary)
            else:
                assert step.text is not None
                await ws.send_str(step.text)
            acks_wanted += 1 + step.is_heartbeat
            await ws.send_str(json.dumps({"type": "session.heartbeat", "event_id": f"hb_{n}"}))
            seen: list[str] = []
            while acks < acks_wanted:
                event = await recv(where)
                if event["type"] == "session.heartbeat_ack":
                    acks += 1
                elif event["type"] == "error":
                    seen.append(event["error"]["code"])
            if step.expect == "invalid_event":
                # A native client is refused in vLLM-Omni's words (docs/protocol.md, "Errors").
                said = {"invalid_event", *(("invalid_json", "bad_event") if _native(mode) else ())}
                assert said & set(seen), f"no invalid_event {where}: {seen}"
            elif step.expect == "error":
                assert seen, f"no coded error {where}"
        marker, marker_id = f"fuzz ok {len(steps)}", f"evt_marker_{len(steps)}"
        update = {"type": "realtime", "instructions": marker}
        await ws.send_str(
            json.dumps({"type": "session.update", "event_id": marker_id, "session": update})
        )
        # A turn-based upstream refuses instructions, then answers the rest; so does the
        # proxy for a GA client once a duplex upstream has heard audio, where vLLM-Omni
        # refuses a native client's whole update (docs/fidelity.md, row 2b).
        refused = False
        while True:
            event = await recv("waiting for session.updated")
            if event["type"] == "error" and event["error"].get("event_id") == marker_id:
                code = event["error"]["code"]
                refused = code in ("unsupported_by_upstream", "instructions_update_unsupported")
                if code == "instructions_update_unsupported" and _native(mode):
                    break
            elif event["type"] == "session.updated":
                told = (event.get("session") or {}).get("instructions")
                # The refused value never shows as applied (the rest of the update does).
                assert not (refused and told == marker), f"refused yet told {marker!r}"
                if refused or told == marker:
                    break
        if ending == "session.close":
            await ws.send_str(json.dumps({"type": "session.close"}))
            while not ws.closed:
                msg = await ws.receive(timeout=STEP_TIMEOUT_S)
                if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
                    break
    return codes


def _check(stack: Stack, mode: str, steps: list[Frame], ending: str) -> None:
    run_bounded(_session(stack.proxy.base, mode, steps, ending), STEP_TIMEOUT_S * (len(steps) + 3))
    census = stack.proxy.settled(stack.baseline)
    assert census["clean"], f"left behind after the session: {census} (baseline {stack.baseline})"
    assert stack.proxy.shim_faults() == stack.faults_before, "the shim reported a fault"


@pytest.mark.parametrize("mode", list(MODES))
@fuzz_timeout
@fuzz_settings(max_examples=30)
@given(
    steps=st.lists(frames, min_size=1, max_size=4),
    ending=st.sampled_from(["close", "session.close"]),
)
def test_fuzzed_client_events_get_coded_answers_and_leave_nothing_behind(
    stack: Stack, mode: str, steps: list[Frame], ending: str
) -> None:
    _check(stack, mode, steps, ending)


DEEP = "[" * 300 + "]" * 300


def test_a_playback_ack_nested_300_deep_is_refused_and_the_relay_session_goes_on(
    stack: Stack,
) -> None:
    text = json.dumps({"type": "playback.ack", "item_id": "item_x", "played_ms": 100, "x": "@"})
    frame = _text_frame(
        "playback.ack nested 300 deep", text.replace('"@"', DEEP), expect="invalid_event"
    )
    _check(stack, "barge_in_emulated", [frame], "close")


async def _cut_and_resume(base: str, mode: str) -> float:
    """Open a session, drop its connection, resume it; the active-sessions gauge then."""
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(ws_url(base, model=mode, **_native(mode))) as ws:
            created = json.loads((await ws.receive(timeout=STEP_TIMEOUT_S)).data)
            sid, token = created["session"]["id"], created["resume_token"]
        async with http.ws_connect(ws_url(base, model=None)) as ws:
            await ws.send_str(
                json.dumps(
                    {
                        "type": "session.resume",
                        "session_id": sid,
                        "resume_token": token,
                        "last_received_server_event_seq": 0,
                    }
                )
            )
            resumed = json.loads((await ws.receive(timeout=STEP_TIMEOUT_S)).data)
            assert resumed["type"] == "session.resumed", resumed
            async with http.get(base + "/metrics") as resp:
                text = await resp.text()
            await ws.send_str(json.dumps({"type": "session.close"}))
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("duplex_proxy_sessions_active{")
    )


def test_a_resumed_session_counts_as_active(stack: Stack) -> None:
    active = run_bounded(_cut_and_resume(stack.proxy.base, "duplex_emulated"), 30)
    assert active == 1
