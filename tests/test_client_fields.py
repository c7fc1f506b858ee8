"""A client field a session keeps (an ``event_id``, ``instructions``, ``tools``) over its
cap is refused at the edge, in every mode, and the session goes on
(``proxy/client_fields.py``; docs/protocol.md, "Errors")."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.servers import Client, connect, proxy, proxy_config, reference, ws_url

KINDS = ["duplex", "duplex-no-barge-in", "turn", "passthrough"]
TD = {"type": "server_vad", "silence_duration_ms": 501}


def config(kind: str, upstream: str, **server: Any) -> Any:
    route: dict[str, Any] = {"model": "m", "upstream": upstream}
    if kind == "passthrough":
        route["mode"] = "passthrough"
    return proxy_config({}, routes=[route], server=server)


async def refused(c: Client, raw: str) -> dict[str, Any]:
    await c.ws.send_str(raw)
    error: dict[str, Any] = (await c.until("error"))["error"]
    return error


async def goes_on(c: Client) -> dict[str, Any]:
    """The session still answers: a small update is applied and told."""
    await c.send({"type": "session.update", "session": {"type": "realtime", "turn_detection": TD}})
    updated: dict[str, Any] = await c.until("session.updated")
    return updated


@pytest.mark.parametrize("kind", KINDS)
async def test_fields_over_their_caps_are_refused_and_the_session_goes_on(kind: str) -> None:
    upstream_kind = "duplex" if kind == "passthrough" else kind
    long_id = "i" * 513  # the default cap is 512 characters
    async with (
        reference(upstream_kind) as upstream,
        proxy(config(kind, upstream)) as base,
        connect(ws_url(base)) as c,
    ):
        await c.until("session.created")
        # A flat frame (an append: taken from its bytes where it can be) and a nested one.
        for raw in (
            '{"type":"input_audio_buffer.append","event_id":"' + long_id + '","audio":"AAAA"}',
            '{"type":"session.update","event_id":"' + long_id + '","session":{"type":"realtime"}}',
        ):
            error = await refused(c, raw)
            assert (error["code"], error["param"], error["event_id"]) == (
                "invalid_event",
                "event_id",
                None,
            )
            assert long_id not in error["message"] and "512" in error["message"]
        instructions = "x" * (256 * 1024 + 1)
        update = {"type": "realtime", "instructions": instructions}
        error = await refused(
            c, json.dumps({"type": "session.update", "event_id": "evt_i", "session": update})
        )
        assert (error["code"], error["param"], error["event_id"]) == (
            "invalid_value",
            "session.instructions",
            "evt_i",
        )
        tools = [{"type": "function", "name": "f", "description": "d" * (256 * 1024)}]
        create = {"type": "response.create", "event_id": "evt_t", "response": {"tools": tools}}
        error = await refused(c, json.dumps(create))
        assert (error["code"], error["param"], error["event_id"]) == (
            "invalid_value",
            "response.tools",
            "evt_t",
        )
        updated = await goes_on(c)
        assert updated["session"].get("instructions") != instructions  # nothing applied


async def test_the_caps_are_configurable() -> None:
    server = {"max_event_id_chars": 1000, "max_instructions_chars": 2048, "max_tools_bytes": 2048}
    async with (
        reference("duplex") as upstream,
        proxy(config("duplex", upstream, **server)) as base,
        connect(ws_url(base)) as c,
    ):
        await c.until("session.created")
        long_id = "i" * 600  # over the default cap, under this one
        session = {"type": "realtime", "turn_detection": TD}
        await c.send({"type": "session.update", "event_id": long_id, "session": session})
        await c.until("session.updated")
        assert not c.of("error")
        update = {"type": "session.update", "session": {"instructions": "x" * 2049}}
        assert (await refused(c, json.dumps(update)))["param"] == "session.instructions"
        tools = [{"type": "function", "name": "f", "description": "d" * 2048}]
        update = {"type": "session.update", "session": {"tools": tools}}
        assert (await refused(c, json.dumps(update)))["param"] == "session.tools"
        await goes_on(c)
