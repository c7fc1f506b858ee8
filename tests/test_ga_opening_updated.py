"""A GA client's ``session.update`` sent before ``session.created`` (the Agents SDK and
LiveKit may send theirs at once) is answered with ``session.updated`` after
``session.created``, in every emulated mode: over a duplex upstream it opened the
upstream session (``proxy/emulated/shim_setup.py``, ``apply_opening``), over a
turn-based one it is answered as a live update."""

from __future__ import annotations

from typing import Any

import pytest

from tests.servers import connect, proxy, proxy_config, reference, ws_url

EARLY = {
    "type": "session.update",
    "event_id": "evt_early_update",
    "session": {
        "type": "realtime",
        "audio": {"input": {"turn_detection": {"type": "server_vad", "silence_duration_ms": 700}}},
    },
}


def _silence_ms(ev: dict[str, Any]) -> Any:
    return ev["session"]["audio"]["input"]["turn_detection"]["silence_duration_ms"]


@pytest.mark.parametrize("kind", ["duplex", "turn"])
async def test_an_update_before_session_created_is_answered_with_session_updated(
    kind: str,
) -> None:
    async with reference(kind) as backend, proxy(proxy_config({"m": backend})) as base:
        async with connect(ws_url(base)) as c:
            await c.send(EARLY)
            await c.until("session.created")
            updated = await c.until("session.updated", timeout=5)
            assert _silence_ms(updated) == 700
            kinds = [e["type"] for e in c.events]
            assert kinds.index("session.created") < kinds.index("session.updated")
            assert not c.of("error"), c.of("error")
