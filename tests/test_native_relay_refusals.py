"""What the proxy cannot read from a vLLM-Omni-native client (an append's audio, format
or rate, a frame that is no event) is refused in vLLM-Omni's words, codes and event
ids, in every mode over a strict stand-in.
"""

from __future__ import annotations

from typing import Any

import pybase64
import pytest

from proxy.reference import ReferenceOptions
from tests.native_client_session import NATIVE, opening
from tests.servers import connect, proxy, proxy_config, reference, ws_url

pytestmark = pytest.mark.timeout(120)


BAD_INPUT = [
    {"type": "input_audio_buffer.append", "audio": "@@@not base64"},
    {"type": "input_audio_buffer.append", "audio": pybase64.b64encode(b"\x00\x01\x02").decode()},
    {"type": "input_audio_buffer.append", "audio": "AAAA", "format": "opus"},
    {"type": "input_audio_buffer.append", "audio": "AAAAAA==", "sample_rate_hz": 12},
    {"type": "playback.ack", "played_ms": "soon"},
    {"type": "session.update", "session": {"input_audio_format": "opus"}},
    # GA's G.711 names are not vLLM-Omni's.
    {"type": "session.update", "session": {"output_audio_format": "audio/pcmu"}},
    {"type": "session.update", "session": {"audio": {"input": {"format": {"type": "audio/pcma"}}}}},
]


async def refusals(url: str) -> list[tuple[str, str, str | None]]:
    """The (code, message, event id) of each refusal of ``BAD_INPUT``, in order."""
    async with connect(url) as c:
        await c.send(opening())
        await c.until("session.created")
        for n, bad in enumerate(BAD_INPUT):
            await c.send({**bad, "event_id": f"bad_{n}"})
        await c.send({"type": "session.heartbeat"})
        await c.until("session.heartbeat_ack")
    return [
        (e["error"]["code"], e["error"]["message"], e["error"].get("event_id"))
        for e in c.of("error")
    ]


@pytest.mark.parametrize("kind", ["duplex-no-barge-in", "turn"])
async def test_bad_input_is_refused_in_vllm_omnis_words(kind: str) -> None:
    """What the relay cannot read (an append's audio, format or rate, an ack's
    position, a session's audio format) goes to the upstream, which refuses it in
    vLLM-Omni's words; over a turn-based upstream the proxy refuses it in those words
    itself (``shim/native_client.py``): the client gets what it would get from the
    server."""
    options = ReferenceOptions(fidelity="strict")
    async with reference("duplex-no-barge-in", options=options) as upstream:
        direct = await refusals(upstream + "?duplex=1&autostart=0&model=m")
    async with (
        reference(kind, options=options) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
    ):
        relayed = await refusals(ws_url(base, **NATIVE))
    assert len(direct) == len(BAD_INPUT), direct
    assert relayed == direct


async def frame_refusals(url: str) -> list[dict[str, Any]]:
    async with connect(url) as c:
        await c.send(opening())
        await c.until("session.created")
        for frame in ("not json", "[1, 2]", '{"no": "type"}'):
            await c.ws.send_str(frame)
        await c.send({"type": "session.heartbeat"})
        await c.until("session.heartbeat_ack")
    return [e["error"] for e in c.of("error")]


@pytest.mark.parametrize("kind", ["duplex", "duplex-no-barge-in", "turn"])
async def test_a_frame_that_is_no_event_is_refused_as_vllm_omni_refuses_it(kind: str) -> None:
    """vLLM-Omni refuses a frame that is not JSON (``invalid_json``) or not an object
    with a ``type`` (``bad_event``) in its own words, naming no event
    (``entrypoints/duplex/serving.py``); the proxy reads every frame before any mode
    sees it, and refuses a native client's the same way."""
    options = ReferenceOptions(fidelity="strict")
    async with reference("duplex", options=options) as upstream:
        direct = await frame_refusals(upstream + "?duplex=1&autostart=0&model=m")
    async with (
        reference(kind, options=options) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
    ):
        through = await frame_refusals(ws_url(base, **NATIVE))
    assert [e["code"] for e in direct] == ["invalid_json", "bad_event", "bad_event"]
    assert through == direct
