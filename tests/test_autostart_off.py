"""A client that says it speaks first (``?autostart=0``, ``?resume=1``) is waited for.

vLLM-Omni with ``autostart=0`` opens nothing before the client's first event and waits
for it up to 10 s (then ``config_timeout``); its own ``DuplexClient`` always connects
so. The proxy waits only ``first_event_wait_ms`` for a client that made no such promise
(tests/test_first_event_wait.py); one that did is waited for as vLLM-Omni waits, so a
first ``session.update`` that is slow to arrive (a distant client, a big ``ref_audio``)
still opens the session, and a resume of its that fails opens nothing
(``proxy/handshake/first_frame.py``).
"""

from __future__ import annotations

import asyncio
import types
from typing import Any

import pytest
import websockets

from proxy.reference.options import ReferenceOptions
from tests.native_client_session import pcm16k
from tests.servers import (
    closed,
    load_clip,
    proxied_client,
    proxy,
    proxy_config,
    reference,
    silence,
)
from tests.vllm_client_through_proxy import IDS, MODES, next_response, play
from tests.vllm_omni_client import RecordingSocket

pytestmark = pytest.mark.timeout(120)

LATE_S = 0.3  # six times the proxy's own wait for a first event (50 ms)


# What each opening takes and shows in session.created: a turn-based upstream takes no
# instructions, so there the proxy's own turn detection is the mark.
OPENINGS = {
    "turn": (
        {"turn_detection": {"type": "server_vad", "silence_duration_ms": 777}},
        "turn_detection",
    ),
    "duplex-no-barge-in": ({"instructions": "opened with me"}, "instructions"),
    "duplex": ({"instructions": "opened with me"}, "instructions"),
}


@pytest.mark.parametrize(("kind", "mode"), MODES, ids=IDS)
async def test_a_late_first_update_opens_the_session(kind: str, mode: str) -> None:
    opening, shown = OPENINGS[kind]
    async with proxied_client(kind, reply_ms=500, duplex="1", autostart="0") as c:
        await asyncio.sleep(LATE_S)
        await c.send({"type": "session.update", "session": opening})
        created = await c.until("session.created")
        assert created["session"]["capabilities"]["proxy"]["mode"] == mode
        if shown == "turn_detection":
            assert created["session"]["turn_detection"]["silence_duration_ms"] == 777, created
        else:
            assert created["session"].get("instructions") == "opened with me", created
        assert not c.of("error"), c.of("error")


async def test_no_first_event_in_time_is_vllm_omnis_config_timeout() -> None:
    server = {"handshake_timeout_s": 0.5}
    async with proxied_client("turn", server=server, duplex="1", autostart="0") as c:
        code = await closed(c)
        assert code == 1000
        assert [e["error"]["code"] for e in c.of("error")] == ["config_timeout"]
        assert not c.of("session.created"), "a session opened that nobody asked for"


@pytest.mark.parametrize("query", [{"autostart": "0"}, {"resume": "1"}, {}])
async def test_a_failed_resume_opens_a_session_only_without_the_promise(
    query: dict[str, str],
) -> None:
    resume = {
        "type": "session.resume",
        "session_id": "sess_" + "0" * 32,
        "resume_token": "not-a-token",
        "last_received_server_event_seq": 0,
    }
    async with proxied_client("turn", duplex="1", **query) as c:
        await c.send(resume)
        refused = await c.until("error")
        assert refused["error"]["code"] == "session_resume_expired", refused
        if query:
            assert await closed(c) == 1008
            assert not c.of("session.created"), "a session opened that nobody asked for"
        else:  # a URL naming a model and promising nothing: a fresh session (docs/protocol.md)
            await c.until("session.created")


def _late_first_send(received: list[dict[str, Any]]) -> Any:
    """A ``connect=`` whose first frame leaves ``LATE_S`` late (a client far away)."""

    async def connect_late(url: str) -> RecordingSocket:
        ws = await websockets.connect(url, max_size=None)
        sent, send = [False], ws.send

        async def send_late(data: Any) -> None:
            if not sent[0]:
                sent[0] = True
                await asyncio.sleep(LATE_S)
            await send(data)

        ws.send = send_late  # type: ignore[method-assign]
        return RecordingSocket(ws, received)

    return connect_late


async def test_vllm_omnis_client_far_away_opens_minicpmo_with_its_ref_audio(
    duplex_client_module: types.ModuleType,
) -> None:
    """MiniCPM-o refuses to open without ``ref_audio``: the client's late first update
    must be what opens it, and a spoken turn is answered."""
    duplex = duplex_client_module
    options = ReferenceOptions(fidelity="strict", profile="minicpmo")
    received: list[dict[str, Any]] = []
    config = duplex.SessionConfig(ref_audio=duplex.audio_data_url(b"RIFF" + b"\0" * 4000))
    async with (
        reference("duplex", reply_ms=1000, options=options) as up,
        proxy(proxy_config({"m": up})) as base,
    ):
        client = duplex.DuplexClient(
            base.replace("http://", "ws://"),
            model="m",
            config=config,
            connect=_late_first_send(received),
            heartbeat_interval_s=None,
            reconnect=None,
        )
        async with client:
            assert client.session_info["capabilities"]["proxy"]["mode"] == "passthrough"
            await client.stream_pcm(pcm16k(load_clip("utt05_clean.wav") + silence(500)))
            await client.commit()
            await play(client, await next_response(client))
        assert not [e for e in received if e.get("type") == "error"], received
