"""``proxy/emulated/held_ends.py``: once released (the session stops or moves), an end
stamped while the session closes is not held again behind a wait nothing cancels."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from proxy.emulated.held_ends import HeldEnds
from proxy.metrics import Metrics


class _NeverSaved:
    """A store checkpoint that never comes (the persister was cancelled by ``stop``)."""

    seq = 0

    async def through(self, seq: int, within_s: float) -> bool:
        await asyncio.sleep(within_s)
        return False


def _held() -> tuple[HeldEnds, Metrics]:
    store = SimpleNamespace(timeout_s=0.5, held_max_frames=64, held_max_bytes=1 << 20)
    config = SimpleNamespace(store=store)
    persister: Any = SimpleNamespace(
        state=SimpleNamespace(store=object(), config=config),
        saved=_NeverSaved(),
        saves=lambda: True,
    )
    metrics = Metrics()
    return HeldEnds(persister, metrics, "duplex_emulated"), metrics


def _unsaved(metrics: Metrics) -> float:
    value = metrics.registry.get_sample_value(
        "duplex_proxy_response_ends_unsaved_total",
        {"mode": "duplex_emulated", "reason": "timeout"},
    )
    return value or 0.0


async def test_an_end_is_held_until_saved_and_released_with_what_followed() -> None:
    held, _ = _held()
    sent: list[str] = []
    held.ended(7)
    held.send(7, lambda: sent.append("response.done"))
    held.send(8, lambda: sent.append("next"))
    assert sent == [] and not held.clear
    held.release()
    assert sent == ["response.done", "next"] and held.clear


async def test_an_end_stamped_after_release_goes_at_once() -> None:
    held, metrics = _held()
    held.release()
    sent: list[str] = []
    held.ended(9)
    held.send(9, lambda: sent.append("response.done"))
    assert sent == ["response.done"] and held.clear
    await asyncio.sleep(0.01)
    assert _unsaved(metrics) == 0.0  # no stray wait left to time out
