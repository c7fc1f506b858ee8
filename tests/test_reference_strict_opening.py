"""Opening a session on the strict stand-ins, like vLLM-Omni 0.30.0 (``docs/fidelity.md``
rows 8, 9, 12 to 15): the session limit counts a session in its disconnect grace,
warm-up holds the upgrade, and the envelope facts of what an open and an error send.

Each test runs a real reference backend over a real WebSocket; "nothing happened" is
shown with the sentinel ``Peer.settle`` (``tests/reference_strict_client.py``).
"""

from __future__ import annotations

import asyncio
import json

import pytest

from proxy.reference import ReferenceOptions
from tests.reference_strict_client import Peer, backend, refusal, session
from tests.servers import resume_of

pytestmark = pytest.mark.timeout(60)


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
