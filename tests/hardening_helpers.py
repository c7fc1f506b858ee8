"""What the hardening tests (tests/test_hardening_*.py) share: the upstream kinds, a
wait for a condition within a bound, and the error codes a client was told.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from tests.servers import Client

KINDS = ["duplex", "duplex-no-barge-in", "turn"]


async def eventually(condition: Callable[[], bool], within_s: float = 5.0) -> None:
    for _ in range(int(within_s / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)
    assert condition()


def codes(c: Client) -> list[str]:
    return [e["error"]["code"] for e in c.of("error")]
