"""When the strict stand-ins answer a commit, like vLLM-Omni 0.30.0 (``docs/fidelity.md``
rows 1, 1a, 1e, 3): only when asked, never while an unacked answer owns playback, and
the commits over an answer or pressed before one merged into one turn.

Each test runs a real reference backend over a real WebSocket; "nothing happened" is
shown with the sentinel ``Peer.settle`` (``tests/reference_strict_client.py``).
"""

from __future__ import annotations

import json
import re

import pytest

from proxy.reference import ReferenceOptions
from tests.reference_strict_client import SPEECH, ack_all, answered, backend, session
from tests.testaudio import vowel

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(
    ("fields", "commit", "answers"),
    [
        ({}, {}, False),
        ({}, {"response_create": False}, False),
        ({}, {"response_create": True}, True),
        ({"extra_body": {"auto_response": True}}, {}, True),
        ({"extra_body": {"auto_response": True}}, {"final": True}, True),
        # runner.py ``_on_commit``: auto_response answers whatever the commit says.
        ({"extra_body": {"auto_response": True}}, {"response_create": False}, True),
    ],
)
async def test_commit_answers_only_with_response_create_or_auto_response(
    fields: dict[str, object], commit: dict[str, object], answers: bool
) -> None:
    async with backend() as (http, url), session(http, url, **fields) as (p, _):
        await p.speak(SPEECH)
        await p.send({"type": "input_audio_buffer.commit", **commit})
        seen = await p.settle()
        assert "input_audio_buffer.committed" in seen
        assert ("response.created" in seen) is answers
        if not answers:
            # The committed audio waits for an explicit response.create.
            await p.send({"type": "response.create"})
            await answered(p)


async def test_unacked_answer_leaves_the_next_commit_unanswered_until_acked() -> None:
    async with backend() as (http, url), session(http, url) as (p, _):
        await p.speak(SPEECH)
        await p.send({"type": "input_audio_buffer.commit", "response_create": True})
        first = await answered(p)
        # Generation is over but nothing was acked: the answer still owns the turn.
        await p.speak(SPEECH)
        await p.send({"type": "input_audio_buffer.commit", "response_create": True})
        seen = await p.settle()
        assert "input_audio_buffer.committed" in seen
        assert "response.created" not in seen
        decisions = p.of("overlap.decision")
        assert decisions and all(d["reason"] == "policy_listen_only" for d in decisions)
        await ack_all(p, first)
        await answered(p)


async def test_short_interjection_over_an_unacked_answer_is_dropped() -> None:
    async with backend() as (http, url), session(http, url) as (p, _):
        await p.speak(SPEECH)
        await p.send({"type": "input_audio_buffer.commit", "response_create": True})
        first = await answered(p)
        await p.speak(vowel(300))
        await p.send({"type": "input_audio_buffer.commit", "response_create": True})
        await p.settle()
        await ack_all(p, first)
        assert "response.created" not in await p.settle()


async def test_commits_over_an_answer_are_taken_and_answered_as_one_turn() -> None:
    """Row 1e: vLLM-Omni's session manager counts a commit pending only until its runner
    takes it (``engine/duplex/session/runner.py``, ``_on_command``), and the runner
    merges the commits over an answer into one deferred turn
    (``_defer_commit_behind_active_response``): five are taken, none refused, and one
    answer follows when the assistant lets go."""
    async with backend() as (http, url), session(http, url) as (p, _):
        ask = {"type": "input_audio_buffer.commit", "response_create": True}
        await p.speak(SPEECH)
        await p.send(ask)
        first = await answered(p)  # unacked: it owns the turn, later turns wait
        for i in range(5):
            await p.speak(SPEECH)
            await p.send({**ask, "event_id": f"evt_{i}"})
        assert (await p.settle()).count("input_audio_buffer.committed") == 5
        assert not p.of("error"), p.of("error")
        await ack_all(p, first)
        await p.until("response.done", within_s=30)
        await p.settle()
        assert len(p.of("response.created")) == 2  # the first, and one for all five


async def test_pressed_turns_are_one_turn_for_response_create() -> None:
    """Commits asking for no answer are kept as one turn (``_flush_and_submit_committed_turn``
    merges each into the audio committed before): ``response.create`` answers them."""
    async with backend() as (http, url), session(http, url) as (p, _):
        for i in range(5):
            await p.speak(SPEECH)
            await p.send({"type": "input_audio_buffer.commit", "event_id": f"evt_{i}"})
        assert (await p.settle()).count("input_audio_buffer.committed") == 5
        await p.send({"type": "response.create"})
        done = await p.until("response.done", within_s=30)
        assert not p.of("error"), p.of("error")
        assert len(p.of("response.created")) == 1
        heard = re.search(r"I heard about (\d+\.\d) seconds", json.dumps(done))
        assert heard is not None and float(heard.group(1)) >= 5 * 1.5, done


def heard_s(done: dict[str, object]) -> float:
    """The seconds of user audio an answer says it heard (``proxy/reference/voice.py``)."""
    heard = re.search(r"I heard about (\d+\.\d) seconds", json.dumps(done))
    assert heard is not None, done
    return float(heard.group(1))


async def test_a_commit_asking_an_answer_answers_the_audio_committed_before_it() -> None:
    """vLLM-Omni's runner holds one ``committed_audio_payload``: a commit asking for no
    answer leaves its audio there, and the next commit, asking for one with nothing
    playing, merges into it (``_flush_and_submit_committed_turn``): one answer for both,
    and nothing left for ``response.create``."""
    async with backend() as (http, url), session(http, url) as (p, _):
        await p.speak(SPEECH)
        await p.send({"type": "input_audio_buffer.commit"})
        await p.speak(SPEECH)
        await p.send({"type": "input_audio_buffer.commit", "response_create": True})
        done = await answered(p)
        assert heard_s(done) >= 2 * 1.5
        await ack_all(p, done)
        await p.send({"type": "response.create"})
        await p.settle()
        assert [e["error"]["code"] for e in p.of("error")] == ["response_create_without_input"]  # type: ignore[index]
        assert len(p.of("response.created")) == 1


async def test_a_commit_asking_no_answer_over_an_answer_leaves_the_deferred_turn_unanswered() -> (
    None
):
    """The last commit merged into the deferred turn says what becomes of it
    (``_defer_commit_behind_active_response`` sets ``deferred_response_create`` to what
    it asks): one asking for none leaves the whole turn for ``response.create``. Over an
    answer still being generated, the turn a stand-in not reading acks owns."""
    options = ReferenceOptions(fidelity="strict", strict_ack_ownership=False, max_sessions=8)
    async with backend(options, reply_ms=6000) as (http, url), session(http, url) as (p, _):
        ask = {"type": "input_audio_buffer.commit", "response_create": True}
        await p.speak(SPEECH)
        await p.send(ask)
        await p.until("response.output_audio.delta")  # generating: it owns the turn
        await p.speak(SPEECH)
        await p.send(ask)
        await p.speak(SPEECH)
        await p.send({"type": "input_audio_buffer.commit", "response_create": False})
        await p.until("response.done")
        await p.settle()
        assert len(p.of("response.created")) == 1  # the deferred turn is not answered
        await p.send({"type": "response.create"})
        done = await answered(p)
        assert heard_s(done) >= 2 * 1.5  # both commits over the answer, as one turn
        assert not p.of("error"), p.of("error")


async def test_a_commit_asking_an_answer_over_an_answer_takes_the_unanswered_turn_with_it() -> None:
    """A commit asking for no answer over an answer, then one asking for one: the
    runner merges both into its one committed payload and answers it all when the
    assistant lets go (``_defer_commit_behind_active_response``)."""
    async with backend() as (http, url), session(http, url) as (p, _):
        await p.speak(SPEECH)
        await p.send({"type": "input_audio_buffer.commit", "response_create": True})
        first = await answered(p)  # unacked: it owns the turn
        await p.speak(SPEECH)
        await p.send({"type": "input_audio_buffer.commit"})
        await p.speak(SPEECH)
        await p.send({"type": "input_audio_buffer.commit", "response_create": True})
        await p.settle()
        await ack_all(p, first)
        done = await answered(p)
        assert heard_s(done) >= 2 * 1.5
        await ack_all(p, done)
        await p.send({"type": "response.create"})
        await p.settle()
        assert [e["error"]["code"] for e in p.of("error")] == ["response_create_without_input"]  # type: ignore[index]


async def test_lenient_answers_a_client_that_never_acks() -> None:
    options = ReferenceOptions(fidelity="lenient")
    async with backend(options) as (http, url), session(http, url) as (p, _):
        for _ in range(2):
            await p.speak(SPEECH)
            await p.send({"type": "input_audio_buffer.commit"})
            await answered(p)
