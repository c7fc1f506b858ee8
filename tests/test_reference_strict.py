"""The strict stand-ins behave like vLLM-Omni 0.30.0 where a client can tell the difference.

One test (or a parametrised family) per row of ``docs/fidelity.md``, each on a real
reference backend over a real WebSocket.  "Nothing happened" is shown with a
sentinel: the stand-in handles a client's events in order and synchronously, so
a ``session.heartbeat`` sent after them is answered only after every event they
caused -- anything before its ``session.heartbeat_ack`` is all there will be.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
import numpy as np
import pytest
from aiohttp import WSMsgType

from proxy.app import STATE, build_app
from proxy.config import config_from_dict
from proxy.reference import ReferenceOptions, running_reference_backend
from proxy.reference.cli import add_reference_arguments, options_from_args
from proxy.reference.options import STRICT_FLAGS
from shim.audio import b64encode
from tests.proxy_process import cli_backend
from tests.servers import resume_of, serve_app
from tests.testaudio import chunks, silence, vowel

pytestmark = pytest.mark.timeout(60)

STRICT = ReferenceOptions(fidelity="strict", max_sessions=8)
SPEECH = vowel(1500)
QUIET = silence(1200)
SERVER_VAD = {"type": "server_vad"}


class Peer:
    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.events: list[dict[str, object]] = []

    async def recv(self, within_s: float = 10.0) -> dict[str, object]:
        msg = await self.ws.receive(timeout=within_s)
        assert msg.type == WSMsgType.TEXT, (msg.type, msg.data, self.ws.close_code)
        event: dict[str, object] = json.loads(msg.data)
        self.events.append(event)
        return event

    async def until(self, kind: str, within_s: float = 10.0) -> dict[str, object]:
        while True:
            event = await self.recv(within_s)
            if event["type"] == kind:
                return event

    async def send(self, event: dict[str, object]) -> None:
        await self.ws.send_str(json.dumps(event))

    async def speak(self, audio: np.ndarray) -> None:
        for chunk in chunks(audio, chunk_ms=100):
            await self.send({"type": "input_audio_buffer.append", "audio": b64encode(chunk)})

    async def settle(self) -> list[object]:
        """Types of every event up to the sentinel's answer (see the module docstring)."""
        start = len(self.events)
        await self.send({"type": "session.heartbeat"})
        await self.until("session.heartbeat_ack")
        return [e["type"] for e in self.events[start:-1]]

    def of(self, kind: str) -> list[dict[str, object]]:
        return [e for e in self.events if e["type"] == kind]


@asynccontextmanager
async def backend(
    options: ReferenceOptions = STRICT, kind: str = "duplex", reply_ms: int = 800
) -> AsyncIterator[tuple[aiohttp.ClientSession, str]]:
    async with running_reference_backend(kind, reply_ms=reply_ms, options=options) as base:
        async with aiohttp.ClientSession() as http:
            yield http, base.replace("http://", "ws://") + "/v1/realtime?duplex=1&autostart=0"


@asynccontextmanager
async def session(
    http: aiohttp.ClientSession, url: str, **fields: object
) -> AsyncIterator[tuple[Peer, dict[str, object]]]:
    """Open with ``session.update`` carrying ``fields``; yields the peer and session.created."""
    async with http.ws_connect(url) as ws:
        p = Peer(ws)
        await p.send({"type": "session.update", "session": {"model": "m", **fields}})
        created = await p.recv()
        assert created["type"] == "session.created", created
        assert (await p.recv())["type"] == "session.updated"
        yield p, created


async def refusal(http: aiohttp.ClientSession, url: str, **fields: object) -> dict[str, object]:
    """The one frame an open that is refused gets, after which the socket closes."""
    async with http.ws_connect(url) as ws:
        await ws.send_str(json.dumps({"type": "session.update", "session": fields}))
        msg = await ws.receive(timeout=10)
        assert msg.type == WSMsgType.TEXT
        frame: dict[str, object] = json.loads(msg.data)
        assert frame["type"] == "error", frame
        assert (await ws.receive(timeout=10)).type in (WSMsgType.CLOSE, WSMsgType.CLOSED)
        error = frame["error"]
        assert isinstance(error, dict)
        return error


async def answered(p: Peer) -> dict[str, object]:
    """Wait for a whole answer; returns its response.done."""
    await p.until("response.created")
    return await p.until("response.done")


async def ack_all(p: Peer, done: dict[str, object]) -> None:
    response = done["response"]
    assert isinstance(response, dict)
    output = response["output"]
    assert isinstance(output, list)
    part = output[0]["content"][0]
    sent = int(part["audio_duration_ms"])
    await p.send({"type": "playback.ack", "played_ms": sent, "response_id": done["response_id"]})
    await p.until("playback.acknowledged")


# ---- 2: turn detection only with server VAD ----


async def test_without_server_vad_speech_is_never_a_turn() -> None:
    async with backend() as (http, url), session(http, url) as (p, _):
        await p.speak(np.concatenate([SPEECH, QUIET, SPEECH, QUIET]))
        seen = await p.settle()
        # note_input_append marks the buffer's first append; nothing ends or answers it.
        assert seen.count("input_audio_buffer.speech_started") == 1
        for kind in ("input_audio_buffer.speech_stopped", "input_audio_buffer.committed"):
            assert kind not in seen
        assert "response.created" not in seen


async def test_with_server_vad_silence_ends_the_turn_and_it_is_answered() -> None:
    async with backend() as (http, url), session(http, url, turn_detection=SERVER_VAD) as (p, _):
        await p.speak(np.concatenate([SPEECH, QUIET]))
        stopped = await p.until("input_audio_buffer.speech_stopped")
        assert int(str(stopped["audio_end_ms"])) > 0
        await p.until("input_audio_buffer.committed")
        await answered(p)


async def test_lenient_detects_turns_without_server_vad() -> None:
    options = ReferenceOptions(fidelity="lenient")
    async with backend(options) as (http, url), session(http, url) as (p, _):
        await p.speak(np.concatenate([SPEECH, QUIET]))
        await p.until("input_audio_buffer.committed")
        await answered(p)


# ---- 2a: an update naming turn_detection replaces the detector ----


async def test_update_naming_turn_detection_loses_the_speech_in_progress() -> None:
    """``session/control.py`` (``on_session_update``) adopts a fresh detector at once
    (``PendingTurnDetectionUpdate.commit``): the speech it was hearing never stops, so
    it is neither committed nor answered; the buffer keeps its audio and the open
    speech_started, and the next speech ends the turn on a clock that restarted."""
    async with backend() as (http, url), session(http, url, turn_detection=SERVER_VAD) as (p, _):
        await p.speak(SPEECH)
        assert "input_audio_buffer.speech_started" in await p.settle()
        await p.send({"type": "session.update", "session": {"turn_detection": SERVER_VAD}})
        await p.until("session.updated")
        await p.speak(QUIET)
        seen = await p.settle()
        for kind in ("input_audio_buffer.speech_stopped", "input_audio_buffer.committed"):
            assert kind not in seen
        assert "response.created" not in seen
        await p.speak(np.concatenate([SPEECH, QUIET]))
        stopped = await p.until("input_audio_buffer.speech_stopped")
        done = await p.until("conversation.item.input_audio_transcription.completed")
        # realtime_events.py (emit_input_speech_started): the first start is still open.
        assert len(p.of("input_audio_buffer.speech_started")) == 1
        # The new detector's clock began at the update: 1.2 s of quiet, 1.5 s of speech.
        assert 2500 <= int(str(stopped["audio_end_ms"])) < 1500 + 2700
        assert stopped["item_id"] == p.of("input_audio_buffer.speech_started")[0]["item_id"]
        # Both utterances were in the buffer the turn commits.
        assert float(str(done["transcript"]).strip("(").split()[0]) >= 3.5
        await answered(p)


async def test_update_naming_turn_detection_restarts_the_vad_clock() -> None:
    async with backend() as (http, url), session(http, url, turn_detection=SERVER_VAD) as (p, _):
        await p.speak(silence(2000))
        await p.send(
            {
                "type": "session.update",
                "session": {"turn_detection": {**SERVER_VAD, "threshold": 0.6}},
            }
        )
        await p.until("session.updated")
        await p.speak(np.concatenate([silence(500), SPEECH, QUIET]))
        started = await p.until("input_audio_buffer.speech_started")
        assert int(str(started["audio_start_ms"])) < 1000  # not 2000 + 500
        stopped = await p.until("input_audio_buffer.speech_stopped")
        assert int(str(stopped["audio_end_ms"])) < 2000 + 500
        await answered(p)


async def test_speech_started_says_the_onset_less_the_prefix_padding() -> None:
    """``engine/duplex/vad.py``: ``max(last reset, onset - prefix_padding_ms)``."""
    td = {**SERVER_VAD, "prefix_padding_ms": 1000}
    async with backend() as (http, url), session(http, url, turn_detection=td) as (p, _):
        await p.speak(np.concatenate([silence(2000), SPEECH, QUIET]))
        started = await p.until("input_audio_buffer.speech_started")
        assert 950 <= int(str(started["audio_start_ms"])) <= 1050  # the onset is at 2 s
        await answered(p)
        # The next onset at 4.7 s: 1 s of padding reaches back past the commit's reset.
        await p.speak(np.concatenate([SPEECH, QUIET]))
        again = int(str((await p.until("input_audio_buffer.speech_started"))["audio_start_ms"]))
        assert 3700 + 100 <= again < 4700, again


async def test_a_clear_does_not_floor_the_padded_start() -> None:
    """Only a commit resets vLLM-Omni's detector (``resolve_commit``'s ``reset_vad``):
    a clear leaves the floor where it was."""
    td = {**SERVER_VAD, "prefix_padding_ms": 1000}
    async with backend() as (http, url), session(http, url, turn_detection=td) as (p, _):
        await p.speak(silence(2000))
        await p.send({"type": "input_audio_buffer.clear"})
        await p.until("input_audio_buffer.cleared")
        await p.speak(np.concatenate([SPEECH, QUIET]))  # the onset at 2 s on the VAD clock
        started = await p.until("input_audio_buffer.speech_started")
        assert 950 <= int(str(started["audio_start_ms"])) <= 1050  # max(0, 2000 - 1000)


async def test_update_not_naming_turn_detection_keeps_the_detector() -> None:
    async with backend() as (http, url), session(http, url, turn_detection=SERVER_VAD) as (p, _):
        await p.speak(SPEECH)
        await p.send({"type": "session.update", "session": {"temperature": 0.5}})
        await p.until("session.updated")
        await p.speak(QUIET)
        stopped = await p.until("input_audio_buffer.speech_stopped")
        assert int(str(stopped["audio_end_ms"])) >= 1400
        await answered(p)


async def test_lenient_detector_ignores_an_update_naming_turn_detection() -> None:
    options = ReferenceOptions(fidelity="lenient")
    async with (
        backend(options) as (http, url),
        session(http, url, turn_detection=SERVER_VAD) as (p, _),
    ):
        await p.speak(SPEECH)
        await p.send({"type": "session.update", "session": {"turn_detection": SERVER_VAD}})
        await p.until("session.updated")
        await p.speak(QUIET)
        await p.until("input_audio_buffer.committed")
        await answered(p)


# ---- 2b: the instructions are fixed once the model has taken in audio ----


async def test_instructions_change_after_input_is_refused_whole() -> None:
    """``session/control.py`` (``on_session_update``): once an append has been accepted
    (``session/append_task.py`` locks the context; a turn answered hands the model its
    audio) an update whose instructions differ is refused whole with
    ``instructions_update_unsupported``; restating them is not a change, and before any
    input they change freely (what else locks, and what does not:
    ``tests/test_reference_instructions_lock.py``)."""
    async with backend() as (http, url), session(http, url, instructions="a") as (p, _):
        await p.send({"type": "session.update", "session": {"instructions": "b"}})
        assert (await p.until("session.updated"))["session"]["instructions"] == "b"
        await p.speak(SPEECH)
        await p.send({"type": "input_audio_buffer.commit", "response_create": True})
        await answered(p)
        await p.settle()
        await p.send(
            {
                "type": "session.update",
                "event_id": "ev_1",
                "session": {"instructions": "c", "temperature": 0.5},
            }
        )
        error = await p.recv()
        assert error["type"] == "error", error
        assert error["error"] == {
            "type": "invalid_request_error",
            "code": "instructions_update_unsupported",
            "message": "session.update cannot change instructions after the native duplex"
            " context is initialized",
            "event_id": "ev_1",
        }
        for refused in ({"instructions": None}, {"instructions": "c"}):
            await p.send({"type": "session.update", "session": refused})
            assert (await p.recv())["type"] == "error"
        await p.send({"type": "session.update", "session": {"instructions": "b", "speed": 1.5}})
        updated = (await p.until("session.updated"))["session"]
        assert (updated["instructions"], updated["temperature"], updated["speed"]) == (
            "b",
            None,
            1.5,
        )


async def test_lenient_instructions_change_after_input() -> None:
    options = ReferenceOptions(fidelity="lenient")
    async with backend(options) as (http, url), session(http, url, instructions="a") as (p, _):
        await p.speak(SPEECH)
        await p.settle()
        await p.send({"type": "session.update", "session": {"instructions": "c"}})
        assert (await p.until("session.updated"))["session"]["instructions"] == "c"


# ---- 3: a commit answers only when asked ----


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


# ---- 1: playback is owned by acks ----


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


# ---- 4: barge-in is opt-in ----


async def test_listen_only_by_default_overlap_never_cuts() -> None:
    async with backend(reply_ms=3000) as (http, url), session(http, url) as (p, created):
        sess = created["session"]
        assert isinstance(sess, dict)
        assert sess["overlap_policy"] == "listen_only"
        assert sess["capabilities"]["supports_barge_in"] is True  # can, but will not
        await p.speak(SPEECH)
        await p.send({"type": "input_audio_buffer.commit", "response_create": True})
        await p.until("response.output_audio.delta")
        await p.speak(SPEECH)  # talking over the answer
        done = await p.until("response.done")
        assert done["response"]["status"] == "completed"  # type: ignore[index]
        assert done["response"]["status_details"]["reason"] == "stop"  # type: ignore[index]
        assert {d["action"] for d in p.of("overlap.decision")} == {"listen"}


async def test_server_vad_barges_in_even_on_a_finished_unacked_answer() -> None:
    async with backend() as (http, url), session(http, url, turn_detection=SERVER_VAD) as (p, c):
        assert c["session"]["overlap_policy"] == "barge_in_on_speech"  # type: ignore[index]
        await p.speak(np.concatenate([SPEECH, QUIET]))
        first = await answered(p)
        assert first["response"]["status"] == "completed"  # type: ignore[index]
        await p.speak(np.concatenate([SPEECH, QUIET]))
        cleared = await p.until("output_audio_buffer.cleared")
        assert cleared["response_id"] == first["response_id"]
        barge = [d for d in p.of("overlap.decision") if d["action"] == "barge_in"]
        assert barge and barge[0]["reason"] == "server_vad_speech_started"
        await answered(p)  # the new speech is the next turn


async def test_server_vad_barge_in_cancels_a_live_answer() -> None:
    async with (
        backend(reply_ms=4000) as (http, url),
        session(http, url, turn_detection=SERVER_VAD) as (p, _),
    ):
        await p.speak(np.concatenate([SPEECH, QUIET]))
        await p.until("response.output_audio.delta")
        await p.speak(SPEECH)
        done = await p.until("response.done")
        response = done["response"]
        assert isinstance(response, dict)
        assert response["status"] == "cancelled"
        assert response["status_details"] == {"type": "cancelled", "reason": "turn_detected"}
        assert response["output"][0]["status"] == "cancelled"


async def test_client_barge_in_reason_and_cancelled_item() -> None:
    async with backend(reply_ms=4000) as (http, url), session(http, url) as (p, _):
        await p.speak(SPEECH)
        await p.send({"type": "input_audio_buffer.commit", "response_create": True})
        await p.until("response.output_audio.delta")
        await p.send({"type": "barge_in"})
        done = await p.until("response.done")
        assert done["response"]["status_details"]["reason"] == "barge_in"  # type: ignore[index]
        assert done["response"]["output"][0]["status"] == "cancelled"  # type: ignore[index]


# ---- 5: playback.ack{truncate} does not cut ----


async def test_playback_ack_truncate_is_dropped() -> None:
    async with backend() as (http, url), session(http, url) as (p, _):
        await p.speak(SPEECH)
        await p.send({"type": "input_audio_buffer.commit", "response_create": True})
        done = await answered(p)
        rid = done["response_id"]
        full = done["response"]["output"][0]["content"][0]["transcript"]  # type: ignore[index]
        await p.send(
            {"type": "playback.ack", "played_ms": 100, "response_id": rid, "truncate": True}
        )
        ack = await p.until("playback.acknowledged")
        assert ack["event"]["truncate"] is False  # type: ignore[index]
        await p.send({"type": "conversation.item.retrieve", "item_id": f"item_{rid}"})
        item = (await p.until("conversation.item.retrieved"))["item"]
        assert item["content"][0]["transcript"] == full  # type: ignore[index]


# ---- 7, 10, 11: per-model open requirements and presets ----


@pytest.mark.parametrize(
    ("profile", "missing", "present", "code"),
    [
        ("minicpmo", {}, {"ref_audio": "data:audio/wav;base64,AA=="}, "ref_audio_required"),
        (
            "nemotron",
            {},
            {"extra_body": {"auto_response": True}},
            "unsupported_nemotron_duplex_mode",
        ),
        ("nemotron", {}, {"extra_body": {"full_duplex": True}}, "unsupported_nemotron_duplex_mode"),
        (
            "qwen3omni",
            {"extra_body": {"auto_response": True}},
            {},
            "invalid_duplex_runtime_config",
        ),
    ],
)
async def test_profile_refuses_an_open_without_its_fields(
    profile: str, missing: dict[str, object], present: dict[str, object], code: str
) -> None:
    options = ReferenceOptions(fidelity="strict", profile=profile)
    async with backend(options) as (http, url):
        error = await refusal(http, url, model="m", **missing)
        assert error["code"] == code
        async with session(http, url, **present) as (_, created):
            assert created["session"]["id"]  # type: ignore[index]


async def test_generic_profile_has_no_open_requirements() -> None:
    async with backend() as (http, url), session(http, url) as (_, created):
        caps = created["session"]["capabilities"]  # type: ignore[index]
        assert caps["supports_barge_in"] is True


async def test_minicpmo_preset_timing() -> None:
    options = ReferenceOptions(fidelity="strict", profile="minicpmo")
    async with backend(options) as (http, url), session(http, url, ref_audio="x") as (_, c):
        caps = c["session"]["capabilities"]  # type: ignore[index]
        assert caps["chunk_period_ms"] == 1000
        assert caps["target_barge_in_latency_ms"] is None


async def test_personaplex_reads_float_24k_only_and_cannot_resume() -> None:
    options = ReferenceOptions(fidelity="strict", profile="personaplex")
    async with backend(options) as (http, url), session(http, url) as (p, created):
        caps = created["session"]["capabilities"]  # type: ignore[index]
        assert caps["supports_client_commit"] is False
        assert caps["supports_session_resume"] is False
        assert caps["chunk_period_ms"] == 80
        assert "resume_token" not in created and "attachment_generation" not in created
        await p.speak(vowel(100))  # PCM16 at 16 kHz: converted to 16 kHz float, refused
        error = await p.until("error")
        assert await p.settle() == []
        assert error["error"] == {
            "type": "invalid_request_error",
            "code": "bad_event",
            "message": "PersonaPlex sample_rate_hz must be 24000",
        }
        floats = (vowel(500, rate_hz=24000).astype(np.float32) / 32768.0).astype("<f4")
        await p.send(
            {
                "type": "input_audio_buffer.append",
                "audio": base64.b64encode(floats.tobytes()).decode(),
                "format": "pcm_f32le",
                "sample_rate_hz": 24000,
            }
        )
        seen = await p.settle()
        assert "error" not in seen and "input_audio_buffer.speech_started" in seen


async def test_model_name_is_not_checked_when_strict() -> None:
    strict = ReferenceOptions(fidelity="strict")
    async with running_reference_backend("duplex", served_model="real", options=strict) as base:
        url = base.replace("http://", "ws://") + "/v1/realtime?duplex=1&autostart=0"
        async with aiohttp.ClientSession() as http, session(http, url, model="other") as (_, c):
            assert c["session"]["model"] == "other"  # type: ignore[index]


# ---- 8: the session limit ----


async def test_max_sessions_counts_a_session_in_its_disconnect_grace() -> None:
    options = ReferenceOptions(fidelity="strict")  # max_sessions defaults to 1
    async with backend(options) as (http, url):
        ws = await http.ws_connect(url)
        first = Peer(ws)
        await first.send({"type": "session.update", "session": {"model": "m"}})
        created = await first.until("session.created")
        error = await refusal(http, url, model="m")
        assert error["code"] == "resource_exhausted"
        assert error["type"] == "rate_limit_error"
        assert error["message"] == "duplex_session_capacity_exhausted: limit=1"
        await ws.close()  # a drop, not session.close: the session waits in its grace
        assert (await refusal(http, url, model="m"))["code"] == "resource_exhausted"
        async with http.ws_connect(url) as again:
            back = Peer(again)
            await back.send(resume_of(created))
            await back.until("session.resumed")
            await back.send({"type": "session.close"})
            await back.until("session.closed")
        async with session(http, url):
            pass  # the slot is free again


async def test_lenient_has_no_session_limit() -> None:
    async with backend(ReferenceOptions(fidelity="lenient")) as (http, url):
        async with session(http, url), session(http, url), session(http, url):
            pass


# ---- 9: warm-up holds the upgrade ----


async def test_warmup_holds_the_upgrade_but_not_the_warmup_client() -> None:
    options = ReferenceOptions(fidelity="strict", warmup_s=600)
    async with backend(options) as (http, url):
        base = url.split("/v1/")[0].replace("ws://", "http://")
        held = asyncio.create_task(http.ws_connect(url))
        async with http.ws_connect(f"{url}&vllm_omni_warmup=1") as ws:
            await ws.send_str(json.dumps({"type": "session.update", "session": {}}))
            assert json.loads((await ws.receive(timeout=10)).data)["type"] == "session.created"
            await ws.send_str(json.dumps({"type": "session.close"}))
        async with http.get(f"{base}/healthz") as health:
            assert health.status == 200
        assert not held.done()  # everything above was served while the upgrade waited
        held.cancel()
        with pytest.raises(asyncio.CancelledError):
            await held


async def test_warmup_admits_once_warm() -> None:
    options = ReferenceOptions(fidelity="strict", warmup_s=0.5)
    async with backend(options) as (http, url), session(http, url):
        pass


# ---- 13-15: envelope facts ----


async def test_envelope_facts() -> None:
    async with backend() as (http, url):
        async with session(http, url) as (p, created):
            assert "server_event_seq" not in created
            assert isinstance(created["resume_token"], str)
            assert created["attachment_generation"] == 1
            updated = p.events[-1]
            assert updated["type"] == "session.updated" and updated["server_event_seq"] == 1
            audio = created["session"]["audio"]  # type: ignore[index]
            assert audio["input"]["format"] == {"type": "audio/pcm", "rate": 16000}
            await p.send({"type": "no.such.event", "event_id": "evt_1"})
            error = await p.until("error")
            assert "server_event_seq" not in error  # a transport-level error
            assert error["error"] == {
                "type": "invalid_request_error",
                "code": "unknown_event",
                "message": "Unknown duplex event type: no.such.event",
                "event_id": "evt_1",
            }
            await p.send({"type": "input_audio_buffer.commit"})
            empty = await p.until("error")
            assert set(empty["error"]) == {"type", "code", "message"}  # type: ignore[arg-type]
        async with http.ws_connect(url.replace("duplex=1", "duplex=0")) as ws:
            flat = json.loads((await ws.receive(timeout=10)).data)
            assert flat == {
                "type": "error",
                "error": "Realtime API is not available",
                "code": "unsupported",
            }


# ---- the command line ----


async def test_cli_strict_profile_reaches_the_backend() -> None:
    options = ("--strict", "--profile", "nemotron", "--max-sessions", "2")
    async with cli_backend("duplex", *options) as backend, aiohttp.ClientSession() as http:
        url = f"ws://127.0.0.1:{backend.port}/v1/realtime?duplex=1&autostart=0"
        error = await refusal(http, url, model="m")
        assert error["code"] == "unsupported_nemotron_duplex_mode"
        auto = {"extra_body": {"auto_response": True}}
        async with session(http, url, **auto) as (_, c):
            caps = c["session"]["capabilities"]  # type: ignore[index]
            assert caps["supports_multi_session"] is True and caps["chunk_period_ms"] == 80
    assert backend.returncode == 0


# ---- the switches ----


def test_default_is_strict_and_each_flag_overrides_the_preset() -> None:
    lenient, strict = ReferenceOptions(fidelity="lenient"), ReferenceOptions()
    for flag in STRICT_FLAGS:
        assert lenient.strict(flag) is False and strict.strict(flag) is True
        assert ReferenceOptions(**{flag: False}).strict(flag) is False
        assert ReferenceOptions(fidelity="lenient", **{flag: True}).strict(flag) is True
    assert lenient.session_limit is None and strict.session_limit == 1
    for bad in ({"fidelity": "exact"}, {"profile": "gpt"}, {"max_sessions": 0}, {"warmup_s": -1}):
        with pytest.raises(ValueError):
            ReferenceOptions(**bad)  # type: ignore[arg-type]


def test_cli_arguments_build_the_options() -> None:
    parser = argparse.ArgumentParser()
    add_reference_arguments(parser)
    assert options_from_args(parser.parse_args([])) == ReferenceOptions(fidelity="strict")
    assert options_from_args(parser.parse_args(["--lenient"])) == ReferenceOptions(
        fidelity="lenient"
    )
    args = ["--strict", "--max-sessions", "3", "--profile", "qwen3omni", "--warmup-s", "2.5"]
    assert options_from_args(parser.parse_args(args)) == ReferenceOptions(
        fidelity="strict", max_sessions=3, profile="qwen3omni", warmup_s=2.5
    )
    with pytest.raises(SystemExit):
        parser.parse_args(["--strict", "--lenient"])


# ---- the embedded backends (proxy/embedded.py) ----


async def test_embedded_backend_is_strict_and_holds_the_replicas_sessions() -> None:
    config = config_from_dict(
        {"server": {"max_sessions": 3}, "routes": [{"model": "m", "upstream": "embedded://duplex"}]}
    )
    app = build_app(config)
    async with serve_app(app), aiohttp.ClientSession() as http:
        url = app[STATE].embedded_urls["duplex"] + "?duplex=1&autostart=0"
        async with (
            session(http, url) as (p, created),
            session(http, url),
            session(http, url),
        ):
            opened = created["session"]
            assert isinstance(opened, dict)
            assert opened["capabilities"]["supports_multi_session"] is True
            # Strict: no server VAD, so speech is no turn and a bare commit is not answered.
            await p.speak(SPEECH)
            await p.send({"type": "input_audio_buffer.commit"})
            seen = await p.settle()
            assert "input_audio_buffer.committed" in seen and "response.created" not in seen
            error = await refusal(http, url)
            assert error["code"] == "resource_exhausted", "[server] max_sessions is its limit"
