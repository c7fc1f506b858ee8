"""A vLLM-Omni-native client of a turn-based upstream (``duplex_emulated``) gets the
session vLLM-Omni's duplex server would give it.

The proxy answers for the upstream here, so each rule is the wheel's
(``docs/fidelity.md``); the upstream is the strict turn-based stand-in and the
speech the dev corpus.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest

from proxy.emulated.client_side import ClientSide
from proxy.metrics import Metrics
from proxy.reference import ReferenceOptions
from shim.journal import Journal
from tests.native_client_session import native_session, opening, pcm16k, say
from tests.servers import (
    Client,
    connect,
    load_clip,
    reference,
    silence,
)

pytestmark = pytest.mark.timeout(120)

SPEECH = pcm16k(load_clip("utt05_clean.wav") + silence(800))


async def test_auto_response_answers_a_commit_that_asks_for_none() -> None:
    """vLLM-Omni answers a commit in an ``auto_response`` session whatever its
    ``response_create`` says (``engine/duplex/session/runner.py``, ``_on_commit``)."""
    async with native_session("turn", "duplex_emulated") as c:
        await say(c, SPEECH)
        await c.send({"type": "input_audio_buffer.commit", "final": True, "response_create": False})
        done = await c.until("response.done", timeout=30)
    assert done["response"]["status"] == "completed"
    assert not c.of("error"), c.of("error")


def refusal(event: dict[str, Any]) -> tuple[str, str, bool]:
    err = event["error"]
    return err["code"], err["message"], "event_id" in err


@pytest.mark.parametrize("through", ["proxy", "stand-in"])
async def test_response_requests_are_refused_in_vllm_omnis_words(through: str) -> None:
    """``response.create`` with nothing committed or over an answer, and
    ``response.cancel`` with no answer or of a finished one, are refused with
    vLLM-Omni's codes and words (``engine/duplex/session/runner.py``,
    ``engine/duplex/realtime_events.py``): what the strict duplex stand-in says
    directly, the proxy says over a turn-based upstream."""
    async with session_for(through) as c:
        await c.send({"type": "response.create", "event_id": "ev_create"})
        assert refusal(await c.until("error")) == (
            "response_create_without_input",
            "Duplex response.create requires committed audio to answer.",
            False,
        )
        await c.send({"type": "response.cancel", "event_id": "ev_cancel"})
        assert refusal(await c.until("error")) == (
            "response_not_active",
            "response.cancel requires an active response",
            True,
        )
        await say(c, SPEECH)
        await c.send({"type": "input_audio_buffer.commit", "final": True})
        await c.until("response.output_audio.delta", timeout=30)
        await c.send({"type": "response.create"})
        assert refusal(await c.until("error")) == (
            "response_already_active",
            "response.create cannot start while another response is active.",
            False,
        )
        done = await c.until("response.done", timeout=30)
        assert done["response"]["status"] == "completed"
        await c.send({"type": "response.cancel"})
        rid = done["response"]["id"]
        assert refusal(await c.until("error")) == (
            "response_not_active",
            f"Response is already complete: {rid}",
            False,
        )


@asynccontextmanager
async def session_for(through: str) -> AsyncIterator[Client]:
    if through == "proxy":
        async with native_session("turn", "duplex_emulated", 3000) as c:
            yield c
        return
    options = ReferenceOptions(fidelity="strict")
    async with (
        reference("duplex", reply_ms=3000, options=options) as upstream,
        connect(upstream + "?duplex=1&autostart=0&model=m") as c,
    ):
        await c.send(opening())
        await c.until("session.created")
        yield c


@pytest.mark.parametrize("through", ["proxy", "stand-in"])
async def test_every_playback_ack_is_answered(through: str) -> None:
    """vLLM-Omni answers each ``playback.ack`` with ``playback.acknowledged`` (the
    acked item and cursors under ``event``), or refuses one naming a response it
    never had (``playback_item_not_found``, naming no event):
    ``engine/duplex/session/playback_ledger.py``."""
    async with session_for(through) as c:
        await say(c, SPEECH)
        await c.send({"type": "input_audio_buffer.commit", "final": True})
        done = await c.until("response.done", timeout=30)
        rid = done["response"]["id"]
        item_id = done["response"]["output"][0]["id"]
        await c.send(
            {"type": "playback.ack", "played_ms": 1200, "committed_ms": 1200, "response_id": rid}
        )
        acked = (await c.until("playback.acknowledged"))["event"]
        await c.send({"type": "playback.ack", "played_ms": 10, "response_id": "resp_unknown"})
        refused = await c.until("error")
    assert set(acked) == {
        "type",
        "session_id",
        "epoch",
        "item_id",
        "played_ms",
        "committed_ms",
        "truncate",
        "playback",
        "history_committed",
    }
    assert (acked["item_id"], acked["played_ms"], acked["committed_ms"]) == (item_id, 1200, 1200)
    assert set(acked["playback"]) == {"generated_ms", "sent_ms", "played_ms", "committed_ms"}
    assert acked["playback"]["sent_ms"] == pytest.approx(3000, abs=50)
    assert refused["error"]["code"] == "playback_item_not_found"
    assert "event_id" not in refused["error"]


@pytest.mark.parametrize("through", ["proxy", "stand-in"])
async def test_every_audio_delta_names_its_format_and_rate(through: str) -> None:
    """vLLM-Omni labels each ``response.output_audio.delta`` with its ``format`` and
    ``sample_rate_hz`` (``engine/duplex/realtime_events.py``); so does the proxy's
    answer over a turn-based upstream to a native client, whose output is 24 kHz PCM16
    here (``DuplexClient``'s default)."""
    async with session_for(through) as c:
        await say(c, SPEECH)
        await c.send({"type": "input_audio_buffer.commit", "final": True})
        await c.until("response.done", timeout=30)
    deltas = c.of("response.output_audio.delta")
    assert deltas
    assert {(d.get("format"), d.get("sample_rate_hz")) for d in deltas} == {("pcm16", 24000)}


@pytest.mark.parametrize("through", ["proxy", "stand-in"])
async def test_a_completed_answer_says_it_stopped(through: str) -> None:
    """vLLM-Omni's completed ``response.done`` has ``status_details`` ``{"type":
    "completed", "reason": "stop"}`` (``engine/duplex/realtime_events.py``), where GA's
    are null; the proxy's answer over a turn-based upstream to a native client too."""
    async with session_for(through) as c:
        await say(c, SPEECH)
        await c.send({"type": "input_audio_buffer.commit", "final": True})
        done = await c.until("response.done", timeout=30)
    assert done["response"]["status"] == "completed"
    assert done["response"]["status_details"] == {"type": "completed", "reason": "stop"}


@pytest.mark.parametrize(
    ("mode", "details"),
    [("duplex_emulated", {"type": "completed", "reason": "stop"}), ("barge_in_emulated", None)],
)
async def test_only_the_proxys_own_completed_answer_gets_its_status_details(
    mode: str, details: dict[str, str] | None
) -> None:
    """A relay's ``response.done`` is the upstream's, passed as it sent it (vLLM-Omni
    leaves ``status_details`` null on its internal path); the proxy's own (over a turn
    upstream) says it stopped, as vLLM-Omni's do."""
    journal = Journal("ab", max_bytes=100_000, max_age_ms=60_000)
    out = ClientSide("sess_x", journal, Metrics(), mode, native=True)
    response = {"id": "resp_1", "status": "completed", "status_details": None, "output": []}
    out.send({"type": "response.done", "response": response})
    (text,) = journal.after(0, 0) or []
    assert orjson.loads(text)["response"]["status_details"] == details


async def test_five_pressed_turns_are_taken_and_answered_by_one_response_create() -> None:
    """vLLM-Omni's count of pending commits goes down as its runner takes each
    (``engine/duplex/session/runner.py``, ``_on_command``), which merges every commit not
    yet answered into one turn: a push-to-talk client's five commits asking for no
    answer are all taken, and its ``response.create`` answers them
    (``shim/dialects/turn_answer.py``)."""
    async with native_session("turn", "duplex_emulated", opened=opening(extra_body={})) as c:
        for i in range(5):
            await say(c, SPEECH if i == 0 else silence(300, 16000))
            await c.send({"type": "input_audio_buffer.commit", "event_id": f"evt_{i}"})
            await c.until("input_audio_buffer.committed")
        await c.send({"type": "response.create"})
        done = await c.until("response.done", timeout=30)
    assert done["response"]["status"] == "completed"
    assert not c.of("error"), c.of("error")
    assert len(c.of("input_audio_buffer.committed")) == 5
    assert len(c.of("response.created")) == 1


# Generation settings vLLM-Omni's duplex session reads, as DuplexClient (voice,
# temperature) and others send them.
SETTINGS = {"voice": "default", "temperature": 0.7, "max_tokens": 200, "speed": 1.2}


async def test_generation_settings_are_taken_without_error_as_a_turn_based_server_takes_them() -> (
    None
):
    """vLLM's turn-based realtime session, which vLLM-Omni serves a turn-based model
    with, reads only the model from ``session.update`` and generates with the model's
    defaults: a voice, temperature or token limit there gets no error. A native client
    over a turn-based upstream sees the same, in its opening and later (a GA client's
    are refused, ``tests/test_ga_session_settings.py``): ``DuplexClient`` would raise
    each error from ``responses()``."""
    async with native_session("turn", "duplex_emulated", opened=opening(**SETTINGS)) as c:
        await c.until("session.updated")
        await c.send({"type": "session.update", "session": {**SETTINGS, "temperature": 0.2}})
        await c.until("session.updated")
        await say(c, SPEECH)
        await c.send({"type": "input_audio_buffer.commit", "final": True})
        done = await c.until("response.done", timeout=30)
    assert done["response"]["status"] == "completed"
    assert not c.of("error"), c.of("error")
