"""Bad input never crashes a session or the server, in every mode (docs/protocol.md)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest

from proxy.reference.options import ReferenceOptions
from tests.ports import closed_port
from tests.servers import connect, load_clip, proxy, proxy_config, reference, silence, ws_url

KINDS = ["duplex", "duplex-no-barge-in", "turn"]


async def test_unknown_model_gets_model_not_found_then_close_1008() -> None:
    async with reference("turn") as upstream, proxy(proxy_config({"m": upstream})) as base:
        async with connect(ws_url(base, model="nope")) as c:
            err = await c.recv()
            assert err["type"] == "error"
            assert err["error"]["code"] == "model_not_found"
            msg = await c.ws.receive()
            assert msg.type == aiohttp.WSMsgType.CLOSE
            assert c.ws.close_code == 1008


async def test_unreachable_upstream_gets_upstream_unavailable_then_close_1011() -> None:
    cfg = proxy_config({"m": f"ws://127.0.0.1:{closed_port()}/v1/realtime"})
    async with proxy(cfg) as base, connect(ws_url(base)) as c:
        err = await c.recv()
        assert err["error"]["code"] == "upstream_unavailable"
        await c.ws.receive()
        assert c.ws.close_code == 1011


@pytest.mark.parametrize("kind", KINDS)
async def test_malformed_frames_get_invalid_event_and_the_session_goes_on(kind: str) -> None:
    async with (
        reference(kind, reply_ms=600) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
    ):
        async with connect(ws_url(base)) as c:
            await c.send({"type": "session.update", "session": {"type": "realtime"}})
            await c.until("session.created")
            for bad in ("{not json", "[1, 2]", '{"no_type": 1}', '{"type": 7}', '"text"'):
                await c.ws.send_str(bad)
                err = await c.until("error")
                assert err["error"]["code"] == "invalid_event", bad
                assert err["error"]["message"]
            await c.ws.send_bytes(b"\x00\x01binary")
            err = await c.until("error")
            assert err["error"]["code"] == "invalid_event"
            assert "binary" in err["error"]["message"]
            # ...and the session still works end to end.
            await c.stream(load_clip("utt09_clean.wav") + silence(900), realtime=False)
            done = await c.until("response.done", timeout=20)
            assert done["response"]["status"] == "completed"


async def test_oversize_frame_closes_with_1009_and_the_server_survives() -> None:
    # The closed session's upstream waits out its disconnect grace: room for the next one.
    async with reference("duplex", options=ReferenceOptions(max_sessions=2)) as upstream:
        cfg = proxy_config({"m": upstream}, server={"max_frame_bytes": 64 * 1024})
        async with proxy(cfg) as base:
            async with connect(ws_url(base)) as c:
                await c.until("session.created")
                await c.ws.send_str(
                    '{"type":"input_audio_buffer.append","audio":"' + "A" * 100_000 + '"}'
                )
                while True:
                    msg = await c.ws.receive(timeout=5)
                    if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
                        break
                assert c.ws.close_code == 1009
            async with connect(ws_url(base)) as again:
                created = await again.until("session.created")
                assert created["session"]["capabilities"]["proxy"]["mode"] == "barge_in_emulated"


@pytest.mark.parametrize(
    ("event", "code"),
    [
        ({"type": "input_audio_buffer.append", "audio": "%%%"}, "invalid_audio"),
        ({"type": "input_audio_buffer.append", "audio": "AAEC"}, "invalid_audio"),
        (
            {
                "type": "conversation.item.truncate",
                "item_id": "missing",
                "content_index": 0,
                "audio_end_ms": 10,
            },
            "item_truncate_invalid_item_id",
        ),
        (
            {
                "type": "conversation.item.truncate",
                "item_id": "missing",
                "content_index": 0,
                "audio_end_ms": -1,
            },
            "invalid_value",  # GA's, param audio_end_ms
        ),
        (
            {
                "type": "session.update",
                "session": {"audio": {"input": {"format": {"type": "audio/opus"}}}},
            },
            "unsupported_audio_format",
        ),
        ({"type": "session.event_ack", "server_event_seq": 10**9}, "invalid_event_ack"),
    ],
)
async def test_emulated_bad_events_get_a_coded_error(event: dict, code: str) -> None:  # type: ignore[type-arg]
    async with reference("turn") as upstream, proxy(proxy_config({"m": upstream})) as base:
        async with connect(ws_url(base)) as c:
            await c.until("session.created")
            await c.send({**event, "event_id": "evt_bad"})
            err = await c.until("error")
            assert err["error"]["code"] == code
            # (Instructions are refused over a turn-based upstream: another setting.)
            td = {"type": "server_vad", "silence_duration_ms": 501}
            await c.send({"type": "session.update", "session": {"turn_detection": td}})
            updated = await c.until("session.updated")
            assert (
                updated["session"]["audio"]["input"]["turn_detection"]["silence_duration_ms"] == 501
            )


@pytest.mark.parametrize("kind", ["turn", "duplex-no-barge-in"])
async def test_an_event_of_no_known_type_is_refused_and_the_emulated_session_answers_after(
    kind: str,
) -> None:
    async with (
        reference(kind, reply_ms=600) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
    ):
        async with connect(ws_url(base)) as c:
            created = await c.until("session.created")
            assert created["session"]["capabilities"]["proxy"]["mode"] != "passthrough"
            await c.send({"type": "other"})
            # Refused by the proxy (turn-based upstream) or relayed and refused by the
            # upstream (the relay never rejects what it does not interpret).
            err = await c.until("error")
            assert err["error"]["code"] in ("unsupported_event", "unknown_event")
            assert "other" in err["error"]["message"]
            await c.stream(load_clip("utt09_clean.wav") + silence(900), realtime=False)
            done = await c.until("response.done", timeout=20)
            assert done["response"]["status"] == "completed"
        async with aiohttp.ClientSession() as http, http.get(base + "/metrics") as resp:
            metrics = await resp.text()
        # Handled as an event the mode does not carry, not as a failure of the shim.
        assert "duplex_proxy_shim_faults_total{" not in metrics


# A session.resume that cannot name a session: ids and tokens of the wrong shape, a
# seq that is not a non-negative integer up to 2^53 (docs/protocol.md, "Resume").
BAD_QUERY_RESUMES = [
    {"last_received_server_event_seq": "abc"},
    {"last_received_server_event_seq": "\u00b2"},  # str.isdigit() says yes, int() says no
    {"last_received_server_event_seq": "9" * 5000},  # past int()'s digit limit
    {"last_received_server_event_seq": "9" * 30},  # an int, far past 2^53
    {"last_received_server_event_seq": "-1"},
    {"last_received_server_event_seq": "1.5"},
    {"last_received_server_event_seq": ""},
    {"session_id": "s" * 200},
    {"session_id": "a{b}c"},
    {"session_id": ""},
    {"resume_token": ""},
]


@pytest.mark.parametrize("bad", BAD_QUERY_RESUMES, ids=lambda b: repr(b)[:40])
async def test_a_malformed_query_resume_gets_invalid_session_resume_then_1008(
    bad: dict[str, str],
) -> None:
    query = {
        "session_id": "sess_" + "0" * 32,
        "resume_token": "t",
        "last_received_server_event_seq": "0",
        **bad,
    }
    async with reference("turn") as upstream, proxy(proxy_config({"m": upstream})) as base:
        url = ws_url(base, model=None) + "?" + urlencode(query)
        async with connect(url) as c:
            err = await c.recv()
            assert err["type"] == "error", err
            assert err["error"]["code"] == "invalid_session_resume"
            msg = await c.ws.receive()
            assert msg.type == aiohttp.WSMsgType.CLOSE
            assert c.ws.close_code == 1008
        # The server is fine: a session opens and answers.
        async with connect(ws_url(base)) as c:
            await c.until("session.created")


BAD_EVENT_RESUMES = [
    {"last_received_server_event_seq": "5"},
    {"last_received_server_event_seq": -1},
    {"last_received_server_event_seq": 2**53 + 1},
    {"last_received_server_event_seq": 10**30},
    {"last_received_server_event_seq": True},
    {"last_received_server_event_seq": 1.5},
    {"last_received_server_event_seq": None},
    {"session_id": 5},
    {"session_id": "s" * 200},
    {"resume_token": 5},
    {"resume_token": ""},
]


@pytest.mark.parametrize("bad", BAD_EVENT_RESUMES, ids=lambda b: repr(b)[:40])
async def test_a_malformed_resume_event_gets_invalid_session_resume(bad: dict[str, Any]) -> None:
    event = {
        "type": "session.resume",
        "session_id": "sess_" + "0" * 32,
        "resume_token": "t",
        "last_received_server_event_seq": 0,
        **bad,
    }
    async with reference("turn") as upstream, proxy(proxy_config({"m": upstream})) as base:
        async with connect(ws_url(base, model=None)) as c:
            await c.send(event)
            err = await c.recv()
            assert err["type"] == "error", err
            assert err["error"]["code"] == "invalid_session_resume"
            await c.ws.receive()
            assert c.ws.close_code == 1008
