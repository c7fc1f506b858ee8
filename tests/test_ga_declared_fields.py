"""Every event a GA client gets in the emulated modes carries only the fields the
``openai`` SDK's GA models declare (recursively), or an extension docs/protocol.md
announces: pydantic lets extra fields through, so validating is not enough.

One session per mode: a spoken question, speech over its answer (a barge-in), the
client's own truncate of the cut item (as GA clients send it when they stop
playback), and the answer to the barge-in.
"""

from __future__ import annotations

import asyncio
import contextlib
import types
import typing
from typing import Any

import pytest
from openai.types.realtime import ConversationItem, RealtimeResponse, RealtimeServerEvent
from pydantic import BaseModel, TypeAdapter

from shim.dialects import ga_events, ga_fields
from tests.realtime_mic import mic
from tests.servers import (
    Client,
    connect,
    load_clip,
    proxy,
    proxy_config,
    reference,
    silence,
    ws_url,
)

GA_EVENTS: TypeAdapter[Any] = TypeAdapter(RealtimeServerEvent)

# What docs/protocol.md announces beyond GA's models: `server_event_seq` on every
# journaled event ("Server events"), `resume_token` and `capabilities` in
# `session.created` ("Connecting"; OpenAI's own session objects carry `id` and
# `object` too), the VAD's `min_speech_duration_ms` (GA clients' sessions).
ANNOUNCED = {
    "server_event_seq",
    "resume_token",
    "session.capabilities",
    "session.id",
    "session.object",
    "session.audio.input.turn_detection.min_speech_duration_ms",
}


def _models(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation may hold, through Optional, unions, lists."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _models(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType, list, tuple, dict):
        return [m for arg in typing.get_args(annotation) for m in _models(arg)]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return []


def _fields(model: type[BaseModel]) -> dict[str, Any]:
    return {(f.alias or name): f.annotation for name, f in model.model_fields.items()}


def undeclared(models: list[type[BaseModel]], data: Any, path: str = "") -> set[str]:
    """Paths in ``data`` that no candidate model declares (the best-fitting model's)."""
    if isinstance(data, list):
        return {p for item in data for p in undeclared(models, item, path)}
    if not isinstance(data, dict) or not models:
        return set()
    best: set[str] | None = None
    for model in models:
        fields = _fields(model)
        kind = fields.get("type")
        if typing.get_origin(kind) is typing.Literal and data.get("type") not in typing.get_args(
            kind
        ):
            continue
        extra = {f"{path}{k}" for k in data if k not in fields}
        for key, value in data.items():
            if key in fields:
                extra |= undeclared(_models(fields[key]), value, f"{path}{key}.")
        if best is None or len(extra) < len(best):
            best = extra
    return best or set()


def not_ga(event: dict[str, Any]) -> set[str]:
    """The fields of ``event`` outside its GA model, less the announced extensions."""
    GA_EVENTS.validate_python(event)
    return undeclared(_models(RealtimeServerEvent), event) - ANNOUNCED


def test_the_check_finds_nested_extras() -> None:
    delta = {
        "type": "response.output_audio.delta",
        "event_id": "e",
        "response_id": "r",
        "item_id": "i",
        "output_index": 0,
        "content_index": 0,
        "delta": "",
    }
    assert not_ga(delta) == set()
    assert not_ga({**delta, "format": "pcm16"}) == {"format"}
    item = {"id": "i", "type": "message", "role": "assistant", "content": []}
    part = {"type": "output_audio", "transcript": "hi", "audio_duration_ms": 5}
    done = {"type": "conversation.item.done", "event_id": "e", "item": {**item, "content": [part]}}
    assert not_ga(done) == {"item.content.audio_duration_ms"}


def test_the_relay_keeps_what_the_sdk_declares() -> None:
    """``shim/dialects/ga_fields.py``'s tables are the SDK's GA models' fields."""
    events = {}
    for model in _models(RealtimeServerEvent):
        [kind] = typing.get_args(model.model_fields["type"].annotation)
        events[kind] = frozenset(_fields(model))
    assert {k: events[k] for k in ga_fields.TOP} == ga_fields.TOP
    assert set(ga_fields.TOP) == set(ga_events.GA_SERVER_EVENTS) - ga_fields.SESSION_EVENTS
    assert ga_fields.RESPONSE == frozenset(_fields(RealtimeResponse))
    items = _models(ConversationItem)
    assert ga_fields.ITEM == {f for m in items for f in _fields(m)}
    parts = [p for m in items if "content" in _fields(m) for p in _models(_fields(m)["content"])]
    assert ga_fields.PART == {f for m in parts for f in _fields(m)}


def test_a_relayed_response_names_its_output_modalities() -> None:
    """vLLM-Omni's ``modalities: ["text", "audio"]`` is GA's spoken answer."""
    ev = {"type": "response.created", "response_id": "r", "response": {"id": "r"}}
    ev["response"]["modalities"] = ["text", "audio"]
    out = ga_fields.only_ga(ev)
    assert out == {
        "type": "response.created",
        "response": {"id": "r", "output_modalities": ["audio"]},
    }
    assert not_ga({**out, "event_id": "e"}) == set()


MODES = [
    ("duplex", "barge_in_emulated"),
    ("duplex-no-barge-in", "barge_in_emulated"),
    ("turn", "duplex_emulated"),
]


async def barged_in_session(c: Client) -> None:
    """A question; speech over its answer; the client's truncate; the next answer."""
    state: dict[str, object] = {}
    task = asyncio.create_task(mic(c, load_clip("utt00_clean.wav") + silence(800), state))
    try:
        first = await c.until("response.output_audio.delta", timeout=30)
        await asyncio.sleep(0.8)
        state["overlay"] = load_clip("utt03_clean.wav")
        await c.until("input_audio_buffer.speech_started", timeout=15)
        # A GA client stops playback and truncates the item where it stopped: here
        # past what the proxy cut (it played all it got), as the Agents SDK's often is.
        played = await c.until("conversation.item.truncated", timeout=15)
        assert played["item_id"] == first["item_id"]
        await c.send(
            {
                "type": "conversation.item.truncate",
                "item_id": first["item_id"],
                "content_index": 0,
                "audio_end_ms": played["audio_end_ms"] + 40,
            }
        )
        while True:
            ev = await c.recv(timeout=20)
            if ev["type"] == "response.done" and ev["response"]["id"] != first["response_id"]:
                break
        with contextlib.suppress(TimeoutError):
            while True:
                await c.recv(timeout=0.5)
    finally:
        state["stop"] = True
        await task


@pytest.mark.parametrize(("kind", "mode"), MODES)
async def test_a_ga_client_gets_only_declared_fields(kind: str, mode: str) -> None:
    """Two answers, the first cut by a barge-in: no event carries a field GA's models
    do not declare, and the cut is told once."""
    async with (
        reference(kind, reply_ms=3000) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
        connect(ws_url(base)) as c,
    ):
        created = await c.until("session.created")
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        pcm = {"type": "audio/pcm", "rate": 24000}
        await c.send(
            {
                "type": "session.update",
                "session": {"type": "realtime", "audio": {"input": {"format": pcm}}},
            }
        )
        await barged_in_session(c)
    found = {ev["type"]: not_ga(ev) for ev in c.events}
    assert {kind: extra for kind, extra in found.items() if extra} == {}
    responses = [ev["response"] for ev in c.events if "response" in ev]
    assert responses and all(r["output_modalities"] == ["audio"] for r in responses)
    truncated = c.of("conversation.item.truncated")
    assert len(truncated) == 1, truncated
