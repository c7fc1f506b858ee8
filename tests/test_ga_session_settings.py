"""A GA client's generation settings in ``session.update`` (voice, speed, token limit,
temperature, prompt, tools): applied and told back, or refused, never accepted and
dropped (``docs/protocol.md``, "Client events"). Through the official ``openai`` SDK,
every event checked against its GA types."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from agents import function_tool
from agents.realtime import RealtimeSessionModelSettings
from agents.realtime.openai_realtime import OpenAIRealtimeWebSocketModel
from openai import AsyncOpenAI
from openai.resources.realtime.realtime import AsyncRealtimeConnection
from openai.types.realtime import SessionUpdatedEvent
from openai.types.realtime.session_update_event import SessionUpdateEvent

from proxy.reference.options import ReferenceOptions
from tests.openai_sdk_client import events_for, first_session_created, sdk_connection, until
from tests.servers import proxy, proxy_config, reference
from tests.upstream_tap import upstream_tap

RELAYS = ["duplex", "duplex-no-barge-in"]
TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "w",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
# LiveKit agents 1.8.9 (openai.py, _create_session_update_event) in every update.
LIVEKIT = {
    "type": "realtime",
    "model": "gpt-realtime",
    "output_modalities": ["audio"],
    "audio": {
        "input": {
            "format": {"type": "audio/pcm", "rate": 24000},
            "turn_detection": {"type": "semantic_vad", "eagerness": "auto"},
        },
        "output": {"format": {"type": "audio/pcm", "rate": 24000}, "speed": 1.0, "voice": "marin"},
    },
    "max_output_tokens": "inf",
    "tool_choice": "auto",
    "tracing": None,
}


async def update(
    conn: AsyncRealtimeConnection, session: dict[str, Any], event_id: str
) -> list[dict[str, Any]]:
    """The events answering one ``session.update`` (sent as the client wrote it)."""
    await conn.send({"type": "session.update", "event_id": event_id, "session": session})
    return await events_for(conn, 1.0)


def refused(events: list[dict[str, Any]]) -> list[tuple[str, str | None, str | None]]:
    return [
        (e["error"]["code"], e["error"].get("param"), e["error"].get("event_id"))
        for e in events
        if e["type"] == "error"
    ]


def updated(events: list[dict[str, Any]]) -> dict[str, Any]:
    told = [e for e in events if e["type"] == "session.updated"]
    assert len(told) == 1, [e["type"] for e in events]
    SessionUpdatedEvent.model_validate(told[0])
    session: dict[str, Any] = told[0]["session"]
    return session


async def test_generation_settings_that_ask_are_refused_over_a_turn_based_upstream() -> None:
    """The turn-based upstream takes only a model name and audio turns: each setting
    that asks for something is refused, coded and named; the rest of the update applies."""
    async with sdk_connection("turn") as conn:
        await first_session_created(conn)
        asks = {
            "type": "realtime",
            "audio": {
                "input": {"turn_detection": {"type": "server_vad", "silence_duration_ms": 700}},
                "output": {"voice": "alloy", "speed": 1.2},
            },
            "max_output_tokens": 256,
            "temperature": 0.6,
            "prompt": {"id": "pmpt_123"},
        }
        events = await update(conn, asks, "evt_asks")
        code = "unsupported_by_upstream"
        params = {
            "session.audio.output.voice",
            "session.audio.output.speed",
            "session.max_output_tokens",
            "session.temperature",
            "session.prompt",
        }
        assert sorted(refused(events)) == sorted((code, p, "evt_asks") for p in params)
        session = updated(events)
        assert session["audio"]["input"]["turn_detection"]["silence_duration_ms"] == 700
        assert "voice" not in session["audio"]["output"]
        assert session["audio"]["output"]["speed"] == 1.0
        assert "max_output_tokens" not in session and "prompt" in session
        assert session["prompt"] is None


async def test_livekits_update_is_refused_its_voice_alone_over_a_turn_based_upstream() -> None:
    """LiveKit states speed 1.0, no token limit and no tracing in every update: they ask
    for nothing. Its voice is a voice the upstream cannot speak in."""
    async with sdk_connection("turn") as conn:
        await first_session_created(conn)
        events = await update(conn, LIVEKIT, "evt_lk")
        param = "session.audio.output.voice"
        assert refused(events) == [("unsupported_by_upstream", param, "evt_lk")]
        assert updated(events)["audio"]["input"]["turn_detection"]["type"] == "semantic_vad"


async def test_session_updated_tells_the_settings_a_turn_based_upstream_runs_with() -> None:
    async with sdk_connection("turn") as conn:
        created = await first_session_created(conn)
        assert created["session"]["tools"] == [] and created["session"]["tracing"] is None
        events = await update(conn, {"type": "realtime", "tool_choice": "none"}, "e")
        assert refused(events) == []  # no tools at all: "none" asks for nothing more
        session = updated(events)
        assert session["tools"] == [] and session["tool_choice"] == "none"
        assert session["audio"]["output"]["speed"] == 1.0
        assert session["tracing"] is None and session["include"] is None
        session = updated(await update(conn, {"type": "realtime", "tool_choice": None}, "e2"))
        assert session["tool_choice"] == "auto"  # null: GA's default again


@pytest.mark.parametrize("kind", RELAYS)
async def test_session_updated_tells_the_settings_the_duplex_upstream_took(kind: str) -> None:
    """Over a duplex upstream each setting goes up and is told back as it stands, the
    earlier ones kept by a later update that does not name them."""
    async with sdk_connection(kind) as conn:
        created = await first_session_created(conn)
        assert created["session"]["tools"] == [] and created["session"]["tool_choice"] == "auto"
        first = {
            "type": "realtime",
            "audio": {"output": {"voice": "alloy", "speed": 1.2}},
            "tools": [TOOL],
            "tool_choice": "required",
            "max_output_tokens": 256,
            "prompt": {"id": "pmpt_123"},
            "include": ["item.input_audio_transcription.logprobs"],
        }
        events = await update(conn, first, "e1")
        assert refused(events) == []
        session = updated(events)
        assert session["audio"]["output"]["voice"] == "alloy"
        assert session["audio"]["output"]["speed"] == 1.2
        assert session["tools"] == [TOOL] and session["tool_choice"] == "required"
        assert session["max_output_tokens"] == 256 and session["prompt"] == {"id": "pmpt_123"}
        assert session["include"] == ["item.input_audio_transcription.logprobs"]
        assert session["tracing"] is None  # no traces are written
        session = updated(await update(conn, {"type": "realtime", "tools": []}, "e2"))
        assert session["tools"] == [] and session["tool_choice"] == "required"
        assert session["audio"]["output"]["voice"] == "alloy"


@pytest.mark.parametrize("kind", RELAYS)
async def test_an_idle_timeout_is_refused_alone_where_the_upstream_takes_the_turns(
    kind: str,
) -> None:
    """``barge_in_emulated``: the duplex upstream takes the turns and has no idle
    timeout, so ``idle_timeout_ms`` is refused as unservable, and the rest of the
    update applies (the Agents SDK and LiveKit restate every setting in each update);
    null asks for nothing."""
    async with sdk_connection(kind) as conn:
        await first_session_created(conn)
        td = {"type": "server_vad", "silence_duration_ms": 700, "idle_timeout_ms": 6000}
        asks = {
            "type": "realtime",
            "instructions": "Be brief.",
            "tools": [TOOL],
            "audio": {"input": {"turn_detection": td}},
        }
        events = await update(conn, asks, "evt_idle")
        param = "session.audio.input.turn_detection.idle_timeout_ms"
        assert refused(events) == [("unsupported_by_upstream", param, "evt_idle")]
        session = updated(events)
        assert session["instructions"] == "Be brief." and session["tools"] == [TOOL]
        turn = session["audio"]["input"]["turn_detection"]
        assert turn["silence_duration_ms"] == 700 and turn["idle_timeout_ms"] is None
        td = {**td, "silence_duration_ms": 800, "idle_timeout_ms": None}
        none = {"type": "realtime", "audio": {"input": {"turn_detection": td}}}
        events = await update(conn, none, "e")
        assert refused(events) == []
        turn = updated(events)["audio"]["input"]["turn_detection"]
        assert turn["silence_duration_ms"] == 800 and turn["idle_timeout_ms"] is None


async def test_an_idle_timeout_is_kept_where_the_proxy_takes_the_turns() -> None:
    async with sdk_connection("turn") as conn:
        await first_session_created(conn)
        td = {"type": "server_vad", "idle_timeout_ms": 6000}
        await conn.send(
            {"type": "session.update", "session": {"audio": {"input": {"turn_detection": td}}}}
        )
        events = await asyncio.wait_for(until(conn, "session.updated"), 5)
        assert refused(events) == []
        assert events[-1]["session"]["audio"]["input"]["turn_detection"]["idle_timeout_ms"] == 6000


def agents_sdk_update() -> dict[str, Any]:
    """The Agents SDK's one ``session.update`` (sent on connect, before
    ``session.created``, and again on every settings change or handoff), for an app
    with instructions, a tool and an idle timeout in its turn detection."""

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    model = OpenAIRealtimeWebSocketModel()
    model.model = "gpt-realtime"
    settings: RealtimeSessionModelSettings = {
        "instructions": "You are a pirate.",
        "tools": [get_weather],
        "turn_detection": {
            "type": "server_vad",
            "idle_timeout_ms": 5000,
            "silence_duration_ms": 700,
        },
    }
    event = SessionUpdateEvent(session=model._get_session_config(settings), type="session.update")
    sent: dict[str, Any] = json.loads(event.model_dump_json(exclude_unset=True))
    return sent


@pytest.mark.parametrize("kind", RELAYS)
async def test_an_opening_update_with_an_idle_timeout_opens_the_upstream_without_it(
    kind: str,
) -> None:
    """A client that speaks first (the Agents SDK and LiveKit send their update before
    ``session.created``) opens the upstream with it: with an idle timeout, the upstream
    opens with the rest of it, ``session.created`` tells that, and the client is told
    after it that the idle timeout is refused, then ``session.updated`` (the update is
    answered as any is); each later restatement likewise."""
    sent = agents_sdk_update()
    strict = ReferenceOptions(fidelity="strict")
    async with reference(kind, reply_ms=800, options=strict) as backend:
        async with (
            upstream_tap(backend) as (tap, tapped),
            proxy(proxy_config({"m": tapped})) as base,
        ):
            port = int(base.rsplit(":", 1)[1])
            url = f"ws://127.0.0.1:{port}/v1"
            async with (
                AsyncOpenAI(api_key="test", websocket_base_url=url) as client,
                client.realtime.connect(model="m") as conn,
            ):
                await conn.send(sent)
                created = (await first_session_created(conn))["session"]
                assert created["instructions"] == "You are a pirate."
                assert [t["name"] for t in created["tools"]] == ["get_weather"]
                turn = created["audio"]["input"]["turn_detection"]
                assert turn["silence_duration_ms"] == 700 and turn["idle_timeout_ms"] is None
                events = await events_for(conn, 1.0)
                param = "session.audio.input.turn_detection.idle_timeout_ms"
                assert refused(events) == [("unsupported_by_upstream", param, None)]
                kinds = [e["type"] for e in events]
                assert kinds.index("error") < kinds.index("session.updated"), kinds
                told = updated(events)
                assert told["audio"]["input"]["turn_detection"] == turn
                opened = [e["session"] for e in tap.sent[0] if e["type"] == "session.update"]
                assert [s.get("instructions") for s in opened] == ["You are a pirate."]
                assert opened[0]["turn_detection"]["silence_duration_ms"] == 700
                assert "idle_timeout_ms" not in json.dumps(tap.sent[0])
                await conn.send(sent)  # a later settings change restates all of it
                events = await events_for(conn, 1.0)
                assert refused(events) == [("unsupported_by_upstream", param, None)]
                session = updated(events)
                assert session["instructions"] == "You are a pirate."
                assert session["audio"]["input"]["turn_detection"]["silence_duration_ms"] == 700
