"""The frames the client fuzz sends (tests/test_fuzz_client.py): hypothesis strategies.

Valid events of every client event type, the same with a field replaced by any JSON
value or dropped, a wrong ``type``, an unknown type, truncated JSON, huge events,
deeply nested JSON (deeper than ``max_json_depth``), binary frames, bad base64 audio;
each ``Frame`` says what docs/protocol.md promises for it.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pybase64
from hypothesis import strategies as st

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
    is "invalid_event" (that code), "error" (some coded error), "strict_error" (some
    coded error, unless the upstream judges it: passthrough) or "any" (an error or an
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


def text_frame(label: str, text: str, expect: str = "any") -> Frame:
    if _type_of(text) is None:
        expect = "invalid_event"  # not a JSON object with a string type (docs/protocol.md)
    return Frame(label, text=text, expect=expect)


def make_event(kind: str, fields: dict[str, Any]) -> dict[str, Any]:
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
    return text_frame(f"valid {kind}", json.dumps(make_event(kind, TEMPLATES[kind])))


@st.composite
def field_replaced(draw: st.DrawFn) -> Frame:
    kind = draw(kinds)
    fields = dict(TEMPLATES[kind])
    key = draw(st.sampled_from([*fields, "extra"]) if fields else st.just("extra"))
    fields[key] = draw(json_values)
    return text_frame(f"{kind}.{key} replaced", json.dumps(make_event(kind, fields)))


@st.composite
def field_dropped(draw: st.DrawFn) -> Frame:
    kind = draw(kinds.filter(lambda k: bool(TEMPLATES[k])))
    fields = dict(TEMPLATES[kind])
    del fields[draw(st.sampled_from(sorted(fields)))]
    return text_frame(f"{kind} missing a field", json.dumps(make_event(kind, fields)))


@st.composite
def wrong_type(draw: st.DrawFn) -> Frame:
    kind = draw(kinds)
    bad = draw(json_values.filter(lambda v: not isinstance(v, str)) | st.just(""))
    return text_frame(f"{kind} with type {bad!r}", json.dumps({**TEMPLATES[kind], "type": bad}))


known = set(TEMPLATES) | set(CLOSERS)


@st.composite
def unknown_type(draw: st.DrawFn) -> Frame:
    kind = draw(st.text(min_size=1, max_size=20).filter(lambda k: k not in known))
    event = {"type": kind, **draw(st.dictionaries(st.text(max_size=6), json_values, max_size=2))}
    event["type"] = kind
    return text_frame(f"unknown type {kind!r}", json.dumps(event), expect="error")


@st.composite
def truncated(draw: st.DrawFn) -> Frame:
    kind = draw(kinds)
    text = json.dumps(make_event(kind, TEMPLATES[kind]))
    cut = draw(st.integers(min_value=0, max_value=len(text) - 1))
    return text_frame(f"{kind} cut at {cut}", text[:cut])


@st.composite
def huge(draw: st.DrawFn) -> Frame:
    kind = draw(kinds)
    size = draw(st.integers(min_value=100_000, max_value=MAX_FRAME_BYTES - 10_000))
    if draw(st.booleans()):
        event = make_event(kind, {**TEMPLATES[kind], "pad": "x" * size})
        return text_frame(f"{kind} padded to {size} bytes", json.dumps(event))
    # A huge append of real (silent) audio, up to ~3 s at 24 kHz.
    pcm = b"\0\0" * min(size // 2, 72_000)
    audio = pybase64.b64encode(pcm).decode()
    return text_frame(
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
    text = json.dumps(make_event(kind, {**TEMPLATES[kind], key: "@@DEEP@@"}))
    expect = "invalid_event" if depth + 1 > MAX_DEPTH else "any"
    label = f"{kind}.{key} nested {depth} deep"
    return text_frame(label, text.replace('"@@DEEP@@"', nested), expect=expect)


@st.composite
def bad_base64(draw: st.DrawFn) -> Frame:
    audio = draw(st.sampled_from(BAD_BASE64) | st.text(max_size=16).filter(_not_pcm16_base64))
    text = json.dumps({"type": "input_audio_buffer.append", "audio": audio})
    # The proxy decodes strictly; vLLM-Omni (and its stand-in,
    # proxy/reference/duplex_input.py) leniently, so in passthrough, where the upstream
    # judges the audio, some of these are audio.
    expect = "strict_error" if _lenient_pcm16(audio) else "error"
    return text_frame(f"append with audio {audio!r}", text, expect=expect)


def _lenient_pcm16(text: str) -> bool:
    """Whether vLLM-Omni takes ``text`` as PCM16: stripped, decoded without validation,
    some bytes, whole samples."""
    try:
        raw = pybase64.b64decode(text.strip(), validate=False)
    except ValueError:
        return False
    return bool(raw) and len(raw) % 2 == 0


def _not_pcm16_base64(text: str) -> bool:
    try:
        raw = pybase64.b64decode(text, validate=True)
    except ValueError:
        return True
    return not raw or len(raw) % 2 == 1


printable = st.characters(exclude_categories=["Cs"])  # a str frame must encode as UTF-8
garbage_text = st.text(printable, max_size=40).map(lambda t: text_frame("raw text", t))
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
