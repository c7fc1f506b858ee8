"""A lost upstream tried again within bounds (``proxy/emulated/upstream_redial.py``): a
redial tries again within its attempts then gives up, a refusal is not tried again,
and the redial outbox holds up to its bound and says when it dropped.
"""

from __future__ import annotations

import pytest

from proxy.config_redial import RedialConfig
from proxy.emulated.upstream_redial import Outbox, retrying
from proxy.upstream import UpstreamRefused, UpstreamUnavailable


async def test_a_redial_tries_again_within_its_attempts_then_gives_up() -> None:
    policy = RedialConfig(attempts=3, budget_s=30.0, backoff_s=0.01)
    tries: list[int] = []

    async def down_twice() -> str:
        tries.append(1)
        if len(tries) < 3:
            raise UpstreamUnavailable("cannot connect to the upstream")
        return "socket"

    failures: list[int] = []
    assert await retrying(down_twice, policy, lambda n, _: failures.append(n)) == "socket"
    assert failures == [1, 2]

    async def always_down() -> str:
        raise UpstreamUnavailable("cannot connect to the upstream")

    with pytest.raises(UpstreamUnavailable):
        await retrying(always_down, policy, lambda n, _: failures.append(n))
    assert failures == [1, 2, 1, 2, 3]


async def test_a_refusal_is_not_tried_again() -> None:
    tries: list[int] = []

    async def refused() -> str:
        tries.append(1)
        raise UpstreamRefused({"type": "error", "error": {"code": "session_resume_expired"}})

    with pytest.raises(UpstreamRefused):
        await retrying(refused, RedialConfig(attempts=5, backoff_s=0.01), lambda n, _: None)
    assert tries == [1]


def test_the_redial_outbox_holds_up_to_its_bound_and_says_when_it_dropped() -> None:
    box = Outbox(limit=10)
    assert box.hold("12345") and box.hold("6789")
    assert not box.hold("abc")  # over the bound: dropped
    assert box.overflowed
    assert box.take() == ["12345", "6789"]
    assert box.take() == []
    assert box.hold("abcdefghij")  # the bound is free again
