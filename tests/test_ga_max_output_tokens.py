"""A GA client's ``max_output_tokens`` is taken as GA takes it: 1..4096 or ``"inf"``.

Anything else is ``invalid_value`` naming the field, and the refused update changes
nothing (``shim/session_options.py``): a limit set before stays, where it was once
told back as ``"inf"`` without a word. Over a turn-based upstream a valid limit is
refused as the dialect cannot carry it (``unsupported_by_upstream``).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.servers import proxied_client

pytestmark = pytest.mark.timeout(60)

BAD = [0, -1, 5000, "lots", 2.5, True]


def _update(tokens: object) -> dict[str, Any]:
    return {
        "type": "session.update",
        "event_id": "evt_tokens",
        "session": {"type": "realtime", "max_output_tokens": tokens},
    }


@pytest.mark.parametrize("kind", ["duplex-no-barge-in", "turn"])
async def test_a_limit_outside_gas_bounds_is_refused_and_changes_nothing(kind: str) -> None:
    async with proxied_client(kind) as c:
        await c.until("session.created")
        if kind != "turn":
            await c.send(_update(50))
            assert (await c.until("session.updated"))["session"]["max_output_tokens"] == 50
        for tokens in BAD:
            await c.send(_update(tokens))
            refused = (await c.until("error"))["error"]
            assert refused["code"] == "invalid_value", (tokens, refused)
            assert refused["param"] == "session.max_output_tokens"
            assert refused["event_id"] == "evt_tokens"
        await c.send({"type": "session.update", "session": {"type": "realtime"}})
        told = await c.until("session.updated")
        if kind != "turn":
            assert told["session"]["max_output_tokens"] == 50, "a refused update changed it"
        assert len(c.of("session.updated")) == (2 if kind != "turn" else 1)
