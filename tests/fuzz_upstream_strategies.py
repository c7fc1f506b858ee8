"""Hypothesis strategies for the upstream fuzz tests: what a misbehaving upstream sends.

Duplex steps (bad JSON, wrong types, missing fields, huge or undecodable audio deltas,
events before or without their response, duplicated ``response.done``,
``server_event_seq`` gaps and repeats, a second ``session.created``, binary frames,
deeply nested JSON), turn-based steps, and whole ``Script``s for the fuzzing upstream
(tests/fuzz_upstream.py).
"""

from __future__ import annotations

import json
from typing import Any

import pybase64
from hypothesis import strategies as st

from tests.fuzz_upstream_frames import pcm_b64
from tests.fuzz_upstream_script import ENDINGS, OPENINGS, Script, Send

RID = "resp_fuzz"

IDS = {"response_id": RID, "item_id": f"item_{RID}", "output_index": 0, "content_index": 0}
HUGE_MS = 30_000  # a 30 s delta: ~1.9 MB of base64


def event_step(label: str, event: Any, seq: str = "next", k: int = 0, stamp: bool = True) -> Send:
    if stamp and isinstance(event, dict):
        event = {**event, "server_event_seq": "@SEQ@"}
    return Send(label, text=json.dumps(event), seq=seq, k=k)


# ---------------------------------------------------------------------- strategies

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=5,
)
audio_payloads = st.sampled_from(
    [
        ("valid 40 ms", pcm_b64(40, 24000)),
        ("bad base64", "%%%not base64"),
        ("odd byte count", pybase64.b64encode(b"\x01\x02\x03").decode()),
        ("empty", ""),
        ("huge", pcm_b64(HUGE_MS, 24000)),
    ]
) | json_values.map(lambda v: (f"value {v!r}", v))
rates = st.sampled_from([24000, 16000, 22050, 8000, 48000, 1, 0, -1, 10**9, "24000", None])
garbage = st.sampled_from(
    [
        Send("bad JSON", text="{not json"),
        Send("JSON array", text="[1, 2]"),
        Send("JSON string", text='"text"'),
        Send("no type", text='{"no_type": 1}'),
        Send("type 7", text='{"type": 7}'),
        Send("empty type", text='{"type": ""}'),
        Send("binary frame", binary=b"\x00\x01binary"),
        Send("empty text", text=""),
        # Deeper than [server] max_json_depth: dropped by the emulated modes.
        Send("deep list", text='{"type": "response.created", "x": ' + "[" * 200 + "]" * 200 + "}"),
        Send("list 300", text='{"type": "response.created", "x": ' + "[" * 300 + "]" * 300 + "}"),
        Send(
            "list 1023",
            text='{"type": "rate_limits.updated", "x": ' + "[" * 1023 + "]" * 1023 + "}",
        ),
        Send("deeper list", text='{"type": "error", "error": ' + "[" * 1100 + "]" * 1100 + "}"),
        Send(
            "deep dict",
            text='{"type": "session.updated", "session": ' + '{"a":' * 200 + "1" + "}" * 200 + "}",
        ),
        Send(
            "dict 600",
            text='{"type": "session.updated", "session": ' + '{"a":' * 600 + "1" + "}" * 600 + "}",
        ),
    ]
)


@st.composite
def duplex_steps(draw: st.DrawFn) -> Send:
    what = draw(
        st.sampled_from(
            [
                "response.created",
                "audio",
                "transcript",
                "audio.done",
                "response.done",
                "response.done twice",
                "speech",
                "committed",
                "session.created again",
                "session.replaced",
                "session.resync_required",
                "session.updated",
                "error",
                "unknown",
                "field replaced",
                "seq",
                "garbage",
            ]
        )
    )
    if what == "response.created":
        return event_step(
            what, {"type": "response.created", "response": {"id": RID, "status": "in_progress"}}
        )
    if what == "audio":
        label, payload = draw(audio_payloads)
        return event_step(
            f"audio delta {label}", {"type": "response.output_audio.delta", **IDS, "delta": payload}
        )
    if what == "transcript":
        return event_step(
            what,
            {"type": "response.output_audio_transcript.delta", **IDS, "delta": draw(json_values)},
        )
    if what == "audio.done":
        return event_step(what, {"type": "response.output_audio.done", **IDS})
    if what in ("response.done", "response.done twice"):
        status = draw(st.sampled_from(["completed", "cancelled", "incomplete", "failed", 7, None]))
        return event_step(
            f"{what} {status!r}",
            {"type": "response.done", "response": {"id": RID, "status": status}},
            seq="repeat" if what.endswith("twice") else "next",
        )
    if what == "speech":
        kind = draw(st.sampled_from(["speech_started", "speech_stopped"]))
        return event_step(
            what,
            {
                "type": f"input_audio_buffer.{kind}",
                "audio_start_ms": draw(json_values),
                "audio_end_ms": draw(json_values),
                "item_id": draw(json_values),
            },
        )
    if what == "committed":
        return event_step(
            what, {"type": "input_audio_buffer.committed", "item_id": draw(json_values)}
        )
    if what == "session.created again":
        return event_step(
            what,
            {"type": "session.created", "session": {"id": draw(st.sampled_from(["other", "", 5]))}},
            stamp=draw(st.booleans()),
        )
    if what == "session.replaced":
        return event_step(what, {"type": "session.replaced", "session_id": draw(json_values)})
    if what == "session.resync_required":
        return event_step(what, {"type": "session.resync_required", "reason": draw(json_values)})
    if what == "session.updated":
        return event_step(what, {"type": "session.updated", "session": draw(json_values)})
    if what == "error":
        return event_step(what, {"type": "error", "error": draw(json_values)})
    if what == "unknown":
        return event_step(
            what, {"type": draw(st.text(min_size=1, max_size=20)), "x": draw(json_values)}
        )
    if what == "field replaced":
        base = {"type": "response.output_audio.delta", **IDS, "delta": pcm_b64(20, 24000)}
        key = draw(st.sampled_from(sorted(base)))
        return event_step(f"delta.{key} replaced", {**base, key: draw(json_values)})
    if what == "seq":
        how = draw(st.sampled_from(["gap", "repeat", "back", "missing", "string", "negative"]))
        event: dict[str, Any] = {
            "type": "response.output_audio_transcript.delta",
            **IDS,
            "delta": "x",
        }
        if how in ("gap", "repeat", "back"):
            k = draw(st.integers(min_value=1, max_value=1000))
            return event_step(f"seq {how} {k}", event, seq=how, k=k)
        if how == "missing":
            return event_step("no seq", event, stamp=False)
        value: Any = "7" if how == "string" else -3
        return event_step(f"seq {value!r}", {**event, "server_event_seq": value}, stamp=False)
    return draw(garbage)


@st.composite
def turn_steps(draw: st.DrawFn) -> Send:
    what = draw(
        st.sampled_from(
            [
                "transcription.delta",
                "audio",
                "transcription.done",
                "audio.done",
                "session.created again",
                "error",
                "unknown",
                "garbage",
            ]
        )
    )
    if what == "transcription.delta":
        return event_step(what, {"type": what, "delta": draw(json_values)}, stamp=False)
    if what == "audio":
        label, payload = draw(audio_payloads)
        rate = draw(rates)
        key = draw(st.sampled_from(["audio", "delta"]))
        return event_step(
            f"audio {key} {label} at {rate!r}",
            {"type": "response.output_audio.delta", key: payload, "sample_rate_hz": rate},
            stamp=False,
        )
    if what == "transcription.done":
        return event_step(what, {"type": what, "text": draw(json_values)}, stamp=False)
    if what == "audio.done":
        return event_step(
            what, {"type": "response.output_audio.done", "has_audio": True}, stamp=False
        )
    if what == "session.created again":
        return event_step(
            what, {"type": "session.created", "id": "again", "created": 2}, stamp=False
        )
    if what == "error":
        return event_step(
            what,
            {"type": "error", "error": draw(json_values), "code": draw(json_values)},
            stamp=False,
        )
    if what == "unknown":
        return event_step(what, {"type": draw(st.text(min_size=1, max_size=20))}, stamp=False)
    return draw(garbage)


TURN_DONE = event_step(
    "audio.done", {"type": "response.output_audio.done", "has_audio": True}, stamp=False
)


@st.composite
def scripts(draw: st.DrawFn, dialect: str) -> Script:
    opening = draw(st.sampled_from(OPENINGS).filter(lambda o: o != "silent") | st.just("valid"))
    steps = draw(st.lists(turn_steps() if dialect == "turn" else duplex_steps(), max_size=6))
    ending = draw(st.sampled_from(ENDINGS))
    if dialect == "turn" and ending == "stay":
        # A turn-based upstream that never ends its answer is a hung upstream, a
        # separate matter; here every answer ends (or the socket does).
        steps = [*steps, TURN_DONE]
    return Script(opening, tuple(steps), ending)
