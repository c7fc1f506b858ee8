"""A vLLM-Omni-native client of the barge-in relay sees what the server itself sends.

``barge_in_emulated`` relays a duplex upstream to a native client (``?duplex=1``) and
adds only the proxy's barge-in. Whatever the proxy sends the upstream on its own
account (its ``playback.ack`` of what was heard, its own turn fields) is answered by
the upstream, and those answers are the proxy's: the client sent no such command and
must never see them. Every upstream is a strict stand-in (``docs/fidelity.md``), the
speech the dev corpus. G.711: tests/test_native_relay_g711.py; bad input:
tests/test_native_relay_refusals.py.
"""

from __future__ import annotations

import pytest

from proxy.reference import ReferenceOptions
from tests.native_client_session import NATIVE, native_session, opening, pcm16k, say
from tests.servers import connect, load_clip, proxy, proxy_config, reference, silence, ws_url

pytestmark = pytest.mark.timeout(120)


async def test_a_refusal_of_the_proxys_own_ack_never_reaches_the_client() -> None:
    """An upstream without truncation gets the client's truncate of an answer as the
    proxy's ``playback.ack`` of what was heard. Of an answer cancelled and followed
    by another turn, vLLM-Omni refuses that ack (``playback_ack_too_late``, with no
    event id: ``engine/duplex/session/playback_ledger.py``); the client, which sent
    no ack, gets the proxy's ``conversation.item.truncated`` and no error."""
    speech = pcm16k(load_clip("utt05_clean.wav") + silence(800))
    async with native_session("duplex-no-barge-in", "barge_in_emulated", 3000) as c:
        await say(c, speech)
        await c.send({"type": "input_audio_buffer.commit", "final": True})
        first = (await c.until("response.created"))["response"]["id"]
        await c.until("response.output_audio.delta")
        await c.send({"type": "response.cancel"})
        done = await c.until("response.done")
        assert done["response"]["status"] == "cancelled"
        await say(c, speech)
        await c.send({"type": "input_audio_buffer.commit", "final": True})
        second = await c.until("response.done", timeout=30)
        assert second["response"]["status"] == "completed"
        truncate = {
            "type": "conversation.item.truncate",
            "item_id": f"item_{first}",
            "content_index": 0,
            "audio_end_ms": 40,
        }
        await c.send(truncate)
        truncated = await c.until("conversation.item.truncated")
        assert truncated["item_id"] == f"item_{first}"
        await c.send({"type": "session.heartbeat"})
        await c.until("session.heartbeat_ack")  # the upstream has answered the ack by now
        assert not c.of("error"), c.of("error")


async def test_without_turn_detection_every_turn_is_told_as_the_upstream_tells_it() -> None:
    """Without server VAD vLLM-Omni marks each buffer's first append
    (``speech_started``) and its commit (``speech_stopped``): ``docs/fidelity.md``,
    row 2. The proxy decides no barge-in then, so a turn spoken right after the client
    cancelled an answer (its audio would still be playing by the proxy's clock) is
    told as the upstream tells it."""
    speech = pcm16k(load_clip("utt05_clean.wav") + silence(800))
    async with native_session("duplex-no-barge-in", "barge_in_emulated", 3000) as c:
        for turn in range(2):
            await say(c, speech)
            await c.send({"type": "input_audio_buffer.commit", "final": True})
            await c.until("response.output_audio.delta", timeout=30)
            if turn == 0:
                await c.send({"type": "response.cancel"})
            done = await c.until("response.done", timeout=30)
        assert done["response"]["status"] == "completed"
    kinds = [e["type"] for e in c.events if e["type"].startswith("input_audio_buffer.")]
    assert kinds == 2 * [
        "input_audio_buffer.speech_started",
        "input_audio_buffer.speech_stopped",
        "input_audio_buffer.committed",
    ]


async def test_the_proxys_own_turn_fields_never_reach_the_upstream() -> None:
    """vLLM-Omni refuses a ``server_vad`` object with fields it does not know
    (``engine/duplex/turn_detection.py``). A native client of the barge-in relay may
    set the proxy's own (``barge_in_decision_ms``, ``overlap_events``:
    docs/protocol.md, "Overlap protocol"): they stay with the proxy, and the upstream
    gets its server VAD, at open and on an update, instead of a refusal (at open, the
    session was opened without turn detection at all)."""
    options = ReferenceOptions(fidelity="strict")
    vad = {"type": "server_vad", "barge_in_decision_ms": 400, "overlap_events": True}
    async with (
        reference("duplex-no-barge-in", options=options) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
        connect(ws_url(base, **NATIVE)) as c,
    ):
        await c.send(opening(turn_detection=vad))
        created = await c.until("session.created")
        assert created["session"]["capabilities"]["proxy"]["mode"] == "barge_in_emulated"
        assert created["session"]["turn_detection"]["type"] == "server_vad"
        later = {"type": "server_vad", "barge_in_decision_ms": 300}
        await c.send({"type": "session.update", "session": {"turn_detection": later}})
        await c.until("session.updated")  # the opening's
        updated = await c.until("session.updated")
        assert updated["session"]["turn_detection"]["type"] == "server_vad"
        await c.send({"type": "session.heartbeat"})
        await c.until("session.heartbeat_ack")
    assert not c.of("error"), c.of("error")
