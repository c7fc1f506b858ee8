"""What fixes a strict duplex stand-in's instructions, as on vLLM-Omni 0.30.0
(``docs/fidelity.md``, row 2b): the model's context locks when an append of input
reaches it (``engine/duplex/session/append_task.py``, ``_submit``), and that happens
only when it takes a turn (``engine/duplex/session/runner.py``): a commit or a
``response.create`` that starts an answer from committed audio, a text-only turn on a
model that takes them (``_start_response_from_committed_audio``), or in a session
with ``extra_body.auto_response`` a whole chunk of audio (``_on_append_audio``:
``allow_emit``). Audio merely buffered, a commit asking no answer, a text item with
no answer, or a ``response.create`` refused for want of input lock nothing."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from proxy.reference import ReferenceOptions
from tests.reference_strict_client import SPEECH, Peer, ack_all, answered, backend, session
from tests.testaudio import silence

pytestmark = pytest.mark.timeout(60)

USER_TEXT = {
    "type": "conversation.item.create",
    "item": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
}


async def applies(p: Peer, session: dict[str, Any], refused_with: str) -> bool:
    """Whether an update of ``session`` applies now (True) or is refused whole, with
    ``refused_with`` as its error code."""
    await p.send({"type": "session.update", "session": session})
    while True:
        event = await p.recv()
        if event["type"] == "session.updated":
            return True
        if event["type"] == "error":
            error = event["error"]
            assert isinstance(error, dict)
            assert error["code"] == refused_with, error
            return False


async def changed(p: Peer) -> bool:
    """Whether an instructions change applies now (True) or is refused whole."""
    return await applies(p, {"instructions": "changed"}, "instructions_update_unsupported")


async def speech_buffered(p: Peer) -> None:
    await p.speak(SPEECH)
    await p.settle()


async def committed_unanswered(p: Peer) -> None:
    await p.speak(SPEECH)
    await p.send({"type": "input_audio_buffer.commit"})
    assert "response.created" not in await p.settle()


async def committed_answered(p: Peer) -> None:
    await p.speak(SPEECH)
    await p.send({"type": "input_audio_buffer.commit", "response_create": True})
    await answered(p)


async def committed_then_created(p: Peer) -> None:
    await committed_unanswered(p)
    await p.send({"type": "response.create"})
    await answered(p)


async def create_without_input(p: Peer) -> None:
    await p.send({"type": "response.create"})
    error = await p.until("error")
    assert error["error"]["code"] == "response_create_without_input"  # type: ignore[index]


async def text_item_unanswered(p: Peer) -> None:
    await p.send(USER_TEXT)
    await p.settle()


Step = Callable[[Peer], Awaitable[None]]


@pytest.mark.parametrize(
    ("step", "locks"),
    [
        (speech_buffered, False),
        (committed_unanswered, False),
        (create_without_input, False),
        (text_item_unanswered, False),
        (committed_answered, True),
        (committed_then_created, True),
    ],
)
async def test_the_context_locks_when_the_model_takes_a_turn(step: Step, locks: bool) -> None:
    async with backend() as (http, url), session(http, url, instructions="a") as (p, _):
        await step(p)
        assert await changed(p) is not locks


@pytest.mark.parametrize(("audio_ms", "locks"), [(100, False), (200, True)])
async def test_an_auto_responding_session_locks_at_its_first_whole_chunk(
    audio_ms: int, locks: bool
) -> None:
    """The generic "duplex" model's chunk is 200 ms: less is buffered, a whole one goes."""
    fields = {"instructions": "a", "extra_body": {"auto_response": True}}
    async with backend() as (http, url), session(http, url, **fields) as (p, _):
        await p.speak(silence(audio_ms))
        await p.settle()
        assert await changed(p) is not locks


async def test_a_text_only_turn_locks_a_model_that_takes_one() -> None:
    """Qwen3-Omni answers a ``response.create`` over user text items alone
    (``supports_text_only_turn``), by an append of the conversation, which locks."""
    options = ReferenceOptions(fidelity="strict", profile="qwen3omni", max_sessions=8)
    async with backend(options) as (http, url), session(http, url, instructions="a") as (p, c):
        assert c["session"]["capabilities"]["supports_text_only_turn"] is True  # type: ignore[index]
        await p.send(USER_TEXT)
        await p.send({"type": "response.create"})
        await answered(p)
        assert not await changed(p)


async def test_a_model_without_text_turns_refuses_one_and_stays_unlocked() -> None:
    """``text_only_turn_unsupported``: the items are dropped as a turn's input and no
    append reaches the model."""
    async with backend() as (http, url), session(http, url, instructions="a") as (p, c):
        assert c["session"]["capabilities"]["supports_text_only_turn"] is False  # type: ignore[index]
        await p.send(USER_TEXT)
        await p.send({"type": "response.create", "event_id": "ev_t"})
        error = (await p.until("error"))["error"]
        assert error == {
            "type": "invalid_request_error",
            "code": "text_only_turn_unsupported",
            "message": "This duplex model answers speech input only.",
        }
        await p.send({"type": "response.create"})
        again = (await p.until("error"))["error"]
        assert again["code"] == "response_create_without_input"  # type: ignore[index]
        assert await changed(p)


async def voice_taken(p: Peer, voice: str) -> bool:
    """Whether a voice update applies now (True) or is refused whole."""
    return await applies(p, {"voice": voice}, "voice_update_after_audio_unsupported")


async def test_the_voice_is_fixed_while_the_current_answers_playback_has_audio() -> None:
    """``session/control.py``: ``audio_started`` is the current response's playback
    (``session.playback``) having audio; it is a fresh one for each response and after
    a cut (``engine_session.py``: ``begin_response``, ``clear_playback_cursor``)."""
    async with backend() as (http, url), session(http, url) as (p, _):
        assert await voice_taken(p, "a")
        await committed_answered(p)
        assert not await voice_taken(p, "b")  # the finished answer's audio
        await p.send({"type": "output_audio_buffer.clear"})
        await p.settle()
        assert await voice_taken(p, "b")  # its playback cut
        await p.speak(SPEECH)
        await p.send({"type": "input_audio_buffer.commit", "response_create": True})
        await p.until("response.output_audio.delta")
        await p.send({"type": "response.cancel"})
        await p.until("response.done")
        assert await voice_taken(p, "c")  # cancelled: its playback cut too


@pytest.mark.parametrize("acked", [False, True])
async def test_an_input_cancel_after_a_finished_answer_frees_the_voice(acked: bool) -> None:
    """vLLM-Omni ``session/runner.py`` ``_on_cancel``: an ``input.cancel`` that finds
    nothing to cut (the answer done, its playback acked in full or not followed) still
    clears the playback cursor (``_cancel_pending_input``: ``advance_barge_in_epoch``)."""
    async with backend() as (http, url), session(http, url) as (p, _):
        assert await voice_taken(p, "a")
        await p.speak(SPEECH)
        await p.send({"type": "input_audio_buffer.commit", "response_create": True})
        done = await answered(p)
        if acked:
            await ack_all(p, done)
        assert not await voice_taken(p, "b")  # the finished answer's audio
        await p.send({"type": "input.cancel"})
        await p.settle()
        assert await voice_taken(p, "b")
