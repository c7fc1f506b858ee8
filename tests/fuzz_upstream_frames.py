"""Valid frames a benign vLLM-Omni upstream sends: a complete duplex response (numbered
by the session's ``Counter``) and a complete turn-based answer, with their audio."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pybase64

from tests.fuzz_upstream_script import Counter


def pcm_b64(ms: int, rate: int) -> str:
    return pybase64.b64encode(b"\x10\x00" * (rate * ms // 1000)).decode()


def duplex_response(seq: Counter, sid: str, rid: str | None = None) -> list[str]:
    """One complete, valid duplex response (two audio deltas)."""
    rid = rid or f"resp-{uuid.uuid4().hex[:8]}"
    iid = f"item_{rid}"
    ids = {"response_id": rid, "item_id": iid, "output_index": 0, "content_index": 0}
    item = {"id": iid, "object": "realtime.item", "type": "message", "role": "assistant"}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": rid, "status": "in_progress"}},
        {"type": "response.output_item.added", "response_id": rid, "output_index": 0, "item": item},
        {"type": "response.content_part.added", **ids, "part": {"type": "audio"}},
        {"type": "response.output_audio.delta", **ids, "delta": pcm_b64(40, 24000)},
        {"type": "response.output_audio_transcript.delta", **ids, "delta": "hello"},
        {"type": "response.output_audio.delta", **ids, "delta": pcm_b64(40, 24000)},
        {"type": "response.output_audio.done", **ids},
        {"type": "response.output_audio_transcript.done", **ids, "transcript": "hello"},
        {"type": "response.content_part.done", **ids, "part": {"type": "audio"}},
        {"type": "response.output_item.done", "response_id": rid, "output_index": 0, "item": item},
        {
            "type": "response.done",
            "response": {"id": rid, "status": "completed", "output": [item]},
        },
    ]
    return [json.dumps(seq.stamp(e, sid)) for e in events]


def turn_answer(rate: int = 24000) -> list[str]:
    """One complete, valid turn-based answer."""
    return [
        json.dumps({"type": "transcription.delta", "delta": "hello"}),
        json.dumps(
            {
                "type": "response.output_audio.delta",
                "audio": pcm_b64(40, rate),
                "format": "pcm16",
                "sample_rate_hz": rate,
            }
        ),
        json.dumps({"type": "transcription.done", "text": "hello"}),
        json.dumps({"type": "response.output_audio.done", "has_audio": True}),
    ]
