"""A native client's opening that vLLM-Omni refuses is refused through the proxy too.

vLLM-Omni 0.30.0 refuses a session whose turn detection it cannot run (anything but
``server_vad``, unknown fields, ``interrupt_response: false``:
``engine/duplex/turn_detection.py``, ``validate_realtime_turn_detection``), in its own
code and words, and opens nothing (``entrypoints/duplex/serving.py``, ``_open``). A
native client of the proxy gets that refusal, not a session opened without the turn
detection it asked for, which would take no turns and never say why (a GA client's
turn detection is the proxy's own job, so its upstream may open without it); over a
turn-based upstream the proxy refuses it itself, in the same words.
"""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web

from proxy.reference import ReferenceOptions
from tests.native_client_session import NATIVE, opening
from tests.servers import closed, connect, proxy, proxy_config, reference, serve_app, ws_url

pytestmark = pytest.mark.timeout(60)

REFUSED_TURNS = [
    {"type": "server_vad", "interrupt_response": False},
    {"type": "semantic_vad"},
    {"type": "server_vad", "eagerness": "high"},
]


async def refusal(url: str, turn: dict[str, Any]) -> list[tuple[str, str]]:
    """The refusal's (code, message), checked to be told as vLLM-Omni tells it: its
    error object as it is (a ``param`` only if one is named), then a normal close
    (its ``_open`` just returns)."""
    async with connect(url) as c:
        await c.send(opening(turn_detection=turn))
        code = await closed(c)
    assert not c.of("session.created"), "nothing opened"
    assert code == 1000, code
    errors = [e["error"] for e in c.of("error")]
    assert all(set(e) <= {"type", "code", "message", "param"} for e in errors), errors
    assert all(isinstance(e["message"], str) and e["message"] != "None" for e in errors)
    return [(e["code"], e["message"]) for e in errors]


@pytest.mark.parametrize("kind", ["duplex", "duplex-no-barge-in", "turn"])
@pytest.mark.parametrize("turn", range(len(REFUSED_TURNS)))
async def test_a_turn_detection_vllm_omni_refuses_is_refused_in_its_words(
    kind: str, turn: int
) -> None:
    options = ReferenceOptions(fidelity="strict")
    async with reference("duplex" if kind == "turn" else kind, options=options) as upstream:
        direct = await refusal(upstream + "?duplex=1&autostart=0&model=m", REFUSED_TURNS[turn])
    assert len(direct) == 1 and "turn_detection" in direct[0][1], direct
    async with (
        reference(kind, options=options) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
    ):
        through = await refusal(ws_url(base, **NATIVE), REFUSED_TURNS[turn])
    assert through == direct


async def update_refusals(url: str) -> list[tuple[str, str]]:
    async with connect(url) as c:
        await c.send(opening())
        await c.until("session.created")
        for turn in REFUSED_TURNS:
            await c.send({"type": "session.update", "session": {"turn_detection": turn}})
        await c.send({"type": "session.heartbeat"})
        await c.until("session.heartbeat_ack")
    return [(e["error"]["code"], e["error"]["message"]) for e in c.of("error")]


@pytest.mark.parametrize("kind", ["duplex", "duplex-no-barge-in", "turn"])
async def test_a_later_update_with_such_turn_detection_is_refused_so(kind: str) -> None:
    """A live session's update is refused ``unsupported_turn_detection`` in the wheel's
    words (``engine/duplex/realtime_commands.py``); the relay leaves it unapplied for
    the upstream to refuse, the proxy over a turn-based upstream refuses it itself."""
    options = ReferenceOptions(fidelity="strict")
    async with reference("duplex" if kind == "turn" else kind, options=options) as upstream:
        direct = await update_refusals(upstream + "?duplex=1&autostart=0&model=m")
    assert [code for code, _ in direct] == len(REFUSED_TURNS) * ["unsupported_turn_detection"]
    async with (
        reference(kind, options=options) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
    ):
        through = await update_refusals(ws_url(base, **NATIVE))
    assert through == direct


async def test_an_upstream_refusal_is_told_with_its_param_and_no_made_up_message() -> None:
    """An upstream's refusal of the opening reaches a native client as it said it (its
    ``param`` kept, no message where it named none, never "None"), then a normal
    close."""

    async def refusing(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.receive()  # the opening
        err = {"type": "invalid_request_error", "code": "invalid_session_config"}
        await ws.send_json({"type": "error", "error": {**err, "param": "session.voice"}})
        await ws.close()
        return ws

    app = web.Application()
    app.router.add_get("/v1/realtime", refusing)
    async with serve_app(app) as up_base:
        upstream = up_base.replace("http://", "ws://") + "/v1/realtime"
        async with (
            proxy(proxy_config({}, routes=[{"model": "m", "upstream": upstream}])) as base,
            connect(ws_url(base, **NATIVE)) as c,
        ):
            await c.send(opening())
            assert await closed(c) == 1000
    (error,) = [e["error"] for e in c.of("error")]
    assert error["code"] == "invalid_session_config", error
    assert error["param"] == "session.voice", error
    assert error["message"] != "None", error
