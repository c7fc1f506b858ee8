"""A turn on the duplex reference backends over a real socket: a spoken turn streams its
answer paced, in order, with its transcript; explicit commits at a declared input rate
are answered only when asked.

On the lenient preset (``tests/reference_duplex_client.py``, ``backend``).
"""

from __future__ import annotations

import re

import pytest

from shim.audio import b64encode
from tests.reference_duplex_client import (
    Peer,
    after_turn,
    backend,
    opened,
    pcm,
    peer,
    session_of,
    session_rid_prefix,
)
from tests.testaudio import chunks, silence, vowel

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(
    ("kind", "rate", "chunk_ms"), [("duplex", 24000, 200), ("duplex-no-barge-in", 22050, 80)]
)
async def test_spoken_turn_streams_paced_audio_and_transcript(
    kind: str, rate: int, chunk_ms: int
) -> None:
    async with after_turn(kind, reply_ms=1000) as p:
        done = await p.until("response.done")
        response = done["response"]
        assert isinstance(response, dict)
        assert response["status"] == "completed"
        assert response["status_details"] == {"type": "completed", "reason": "stop"}
        assert (await p.recv())["type"] == "rate_limits.updated"
        types = p.types()
        start = types.index("input_audio_buffer.speech_started")
        assert types[start : start + 7] == [
            "input_audio_buffer.speech_started",
            "input_audio_buffer.speech_stopped",
            "conversation.item.added",
            "conversation.item.created",
            "input_audio_buffer.committed",
            "conversation.item.input_audio_transcription.completed",
            "conversation.item.done",
        ]
        first = types.index("response.created")
        assert types[first : first + 6] == [
            "response.created",
            "conversation.item.added",
            "conversation.item.created",
            "response.output_item.added",
            "response.content_part.added",
            "response.speak",
        ]
        deltas = p.of("response.output_audio.delta")
        for index in (
            types.index("response.output_audio.delta") + 2 * i for i in range(len(deltas))
        ):
            assert types[index] == "response.output_audio.delta"
            assert types[index + 1] == "response.output_audio_transcript.delta"
        assert types[-7:-1] == [
            "response.output_audio.done",
            "response.output_audio_transcript.done",
            "response.content_part.done",
            "response.output_item.done",
            "conversation.item.done",
            "response.done",
        ]
        rid = str(done["response_id"])
        assert re.fullmatch(rf"resp-{session_rid_prefix(p)}-0-[0-9a-f]{{8}}", rid)
        assert all(d["response_id"] == rid and d["item_id"] == f"item_{rid}" for d in deltas)
        assert {(d["format"], d["sample_rate_hz"]) for d in deltas} == {("pcm16", rate)}
        samples = sum(pcm(d).size for d in deltas)
        assert abs(samples - rate) <= rate * chunk_ms // 1000
        metadata = [d["metadata"] for d in deltas]
        durations = [m["audio_duration_ms"] for m in metadata if isinstance(m, dict)]
        assert durations == sorted(durations) and durations[-1] >= 990
        text = "".join(str(e["delta"]) for e in p.of("response.output_audio_transcript.delta"))
        assert text == p.of("response.output_audio_transcript.done")[0]["transcript"]
        assert "reply number 1" in text
        span = p.times[p.events.index(deltas[-1])] - p.times[p.events.index(deltas[0])]
        assert 0.7 * (1000 - chunk_ms) / 1000 <= span <= 1.6
        seqs = [e["server_event_seq"] for e in p.events[1:]]
        assert seqs == list(range(1, len(seqs) + 1))
        user = p.of("conversation.item.input_audio_transcription.completed")[0]
        assert re.fullmatch(r"\(\d+\.\d s of speech\)", str(user["transcript"]))


async def test_explicit_commit_paths_and_declared_input_rate() -> None:
    async with (
        backend("duplex", reply_ms=400) as (http, base),
        peer(http, f"{base}/v1/duplex?autostart=0") as p,
    ):
        await p.send(
            {
                "type": "session.update",
                "session": {
                    "model": "m",
                    "audio": {"input": {"format": {"type": "audio/pcm", "rate": 24000}}},
                },
            }
        )
        session = session_of(await opened(p))
        assert session["audio"] == {"input": {"format": {"type": "audio/pcm", "rate": 24000}}}
        # Silence then commit: a non-speech commit, committed without a response.
        for chunk in chunks(silence(300, rate_hz=24000), rate_hz=24000):
            await p.send({"type": "input_audio_buffer.append", "audio": b64encode(chunk)})
        await p.send({"type": "input_audio_buffer.commit"})
        committed = await p.until("input_audio_buffer.committed")
        details = committed["event"]
        assert isinstance(details, dict) and details["no_response"] is True
        # Speech at the declared 24 kHz, committed without a response, answered on request.
        for chunk in chunks(vowel(400, rate_hz=24000), rate_hz=24000):
            await p.send({"type": "input_audio_buffer.append", "audio": b64encode(chunk)})
        await p.send({"type": "input_audio_buffer.commit", "response_create": False})
        stopped = await p.until("input_audio_buffer.speech_stopped")
        assert stopped["audio_end_ms"] == 0
        heard = await p.until("conversation.item.input_audio_transcription.completed")
        assert heard["transcript"] == "(0.4 s of speech)"
        await p.until("conversation.item.done")
        assert await no_event(p, "response.created", 0.4)
        await p.send({"type": "response.create", "response": {"temperature": 0.2}})
        refused = await p.until("error")
        assert isinstance(refused["error"], dict)
        assert refused["error"]["code"] == "unsupported_native_response_options"
        await p.send({"type": "response.create"})
        await p.until("response.created")
        done = await p.until("response.done")
        assert isinstance(done["response"], dict) and done["response"]["status"] == "completed"
        await p.send({"type": "input.text.append", "text": "hi", "event_id": "evt_t"})
        text = await p.until("error")
        assert isinstance(text["error"], dict)
        assert text["error"]["code"] == "native_text_append_unsupported"
        assert text["error"]["event_id"] == "evt_t"


async def no_event(p: Peer, kind: str, seconds: float) -> bool:
    try:
        await p.until(kind, within_s=seconds)
    except TimeoutError:
        return True
    return False
