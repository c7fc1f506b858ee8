"""A GA client's ``response.create`` options in the emulated modes, through the
official ``openai`` SDK (``shim/dialects/ga_response_create.py``): what vLLM-Omni
would carry out otherwise than GA says is refused with a coded ``error`` naming it and
no response; the session's own output format is accepted; ``metadata`` comes back as
the response's own. Every event is checked against the SDK's GA types."""

from __future__ import annotations

from typing import Any

import pytest
from openai.resources.realtime.realtime import AsyncRealtimeConnection

from shim.dialects.ga_response_create import Refusal, screened
from shim.session_config import ClientSessionConfig, apply_session_update
from shim.vad_gate import VadParams
from tests.openai_sdk_client import (
    append_audio,
    events_for,
    events_until_response_done,
    first_session_created,
    refusal,
    sdk_connection,
)
from tests.openai_sdk_turns import push_to_talk
from tests.servers import load_clip

# Over a turn-based upstream (duplex_emulated) the same options are refused too.
KINDS = ["duplex", "duplex-no-barge-in", "turn"]
REFUSED = [
    ({"conversation": "none"}, "response.conversation"),
    ({"conversation": "none", "input": []}, "response.conversation"),
    ({"input": []}, "response.input"),
    ({"output_modalities": ["text"]}, "response.output_modalities"),
    ({"audio": {"output": {"format": {"type": "audio/pcmu"}}}}, "response.audio.output.format"),
    (
        {
            "audio": {"output": {"format": {"type": "audio/pcm", "rate": 24000}}},
            "output_modalities": ["text"],
        },
        "response.output_modalities",
    ),
]


async def committed_turn(conn: AsyncRealtimeConnection) -> None:
    await first_session_created(conn)
    assert (await push_to_talk(conn))["type"] == "session.updated"
    await append_audio(conn, load_clip("utt04_clean.wav"))
    await conn.input_audio_buffer.commit()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("options", "param"), REFUSED)
async def test_an_option_the_upstream_would_not_honour_is_refused_and_nothing_answers(
    kind: str, options: dict[str, Any], param: str
) -> None:
    async with sdk_connection(kind) as conn:
        await committed_turn(conn)
        await conn.send({"type": "response.create", "event_id": "evt_opt", "response": options})
        err = (await refusal(conn))["error"]
        assert (err["code"], err["param"], err["event_id"]) == (
            "unsupported_by_upstream",
            param,
            "evt_opt",
        ), err
        later = await events_for(conn, 2.0)
        assert "response.created" not in [e["type"] for e in later], later
        await conn.response.create()  # the session goes on: the turn is answered
        answer = await events_until_response_done(conn)
        assert answer[-1]["response"]["status"] == "completed"


@pytest.mark.parametrize("kind", KINDS)
async def test_metadata_comes_back_as_the_responses_own_and_the_sessions_format_is_fine(
    kind: str,
) -> None:
    async with sdk_connection(kind) as conn:
        await committed_turn(conn)
        metadata = {"topic": "weather", "turn": "1"}
        pcm = {"type": "audio/pcm", "rate": 24000}
        await conn.response.create(
            response={"metadata": metadata, "audio": {"output": {"format": pcm}}}
        )
        events = await events_until_response_done(conn)
        (created,) = [e for e in events if e["type"] == "response.created"]
        assert created["response"]["metadata"] == metadata
        assert events[-1]["response"]["metadata"] == metadata
        assert events[-1]["response"]["status"] == "completed"
        assert any(e["type"] == "response.output_audio.delta" for e in events)
        await append_audio(conn, load_clip("utt05_clean.wav"))
        await conn.input_audio_buffer.commit()
        await conn.response.create()
        events = await events_until_response_done(conn)
        assert events[-1]["response"].get("metadata") is None, "none asked: none told"


async def test_bad_metadata_is_an_invalid_value() -> None:
    async with sdk_connection("duplex") as conn:
        await committed_turn(conn)
        await conn.send({"type": "response.create", "response": {"metadata": {"n": 1}}})
        err = (await refusal(conn))["error"]
        assert (err["code"], err["param"]) == ("invalid_value", "response.metadata"), err


def test_audio_among_the_modalities_and_a_format_at_the_sessions_rate_are_accepted() -> None:
    pcm16k = {"type": "audio/pcm", "rate": 16000}
    update = {"type": "session.update", "session": {"audio": {"output": {"format": pcm16k}}}}
    cfg = apply_session_update(ClientSessionConfig(), update, VadParams())
    accepted = [
        {"output_modalities": ["audio", "text"]},
        {"output_modalities": ["text", "audio"]},
        {"modalities": ["text", "audio"]},
        {"audio": {"output": {"format": {"type": "audio/pcm"}}}},
        {"output_audio_format": "pcm16"},
    ]
    for options in accepted:
        sent, _ = screened({"type": "response.create", "response": options}, cfg)
        assert "metadata" not in sent["response"], options
    at_24k = {"audio": {"output": {"format": {"type": "audio/pcm", "rate": 24000}}}}
    for options in [at_24k, {"output_modalities": ["text"]}, {"output_modalities": "audio"}]:
        with pytest.raises(Refusal):
            screened({"type": "response.create", "response": options}, cfg)
