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


class _Log:
    def __init__(self) -> None:
        self.warnings: list[str] = []

    def warning(self, event: str, **fields: Any) -> None:
        self.warnings.append(event)


def _held(max_frames: int = 64) -> tuple[HeldEnds, Metrics]:
    store = SimpleNamespace(timeout_s=0.5, held_max_frames=max_frames, held_max_bytes=1 << 20)
    config = SimpleNamespace(store=store)
    persister: Any = SimpleNamespace(
        state=SimpleNamespace(store=object(), config=config),
        saved=_NeverSaved(),
        saves=lambda: True,
        flush_now=lambda: None,
        session=SimpleNamespace(log=_Log()),
    )
    metrics = Metrics()
    return HeldEnds(persister, metrics, "duplex_emulated"), metrics


def _unsaved(metrics: Metrics, reason: str = "timeout") -> float:
    value = metrics.registry.get_sample_value(
        "duplex_proxy_response_ends_unsaved_total",
        {"mode": "duplex_emulated", "reason": reason},
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


async def test_a_close_the_session_outlives_leaves_a_later_client_held_for() -> None:
    held, _ = _held()
    sent: list[str] = []
    held.ended(3)
    held.send(3, lambda: sent.append("response.done"))
    await held.settle(1011)  # the proxy closes this client; the session goes on
    assert sent == ["response.done"] and held.clear
    held.ended(5)  # a later client's end: held again until saved
    held.send(5, lambda: sent.append("later response.done"))
    assert sent == ["response.done"] and not held.clear
    held.release()


async def test_withheld_counts_each_end_the_drained_client_is_not_sent() -> None:
    held, metrics = _held()
    sent: list[str] = []
    for seq in (3, 5):
        held.ended(seq)
        held.send(seq, lambda: sent.append("response.done"))
    held.release(unsaved=False)
    assert sent == [] and _unsaved(metrics, "withheld") == 2.0


async def test_nothing_is_withheld_when_no_client_is_attached() -> None:
    held, metrics = _held()
    held.ended(3)
    held.send(3, lambda: None)
    held.drop()  # the client left
    held.release(unsaved=False)
    assert _unsaved(metrics, "withheld") == 0.0


async def test_over_cap_counts_each_end_and_warns_once_while_the_store_lags() -> None:
    held, metrics = _held(max_frames=4)
    for seq in (1, 10):
        held.ended(seq)
        held.ended(seq + 1)
        for n in range(6):
            held.send(seq + 1 + n, lambda: None)
    assert _unsaved(metrics, "over_cap") == 4.0
    assert held.persister.session.log.warnings == ["held_events_over_cap"]
    held.release()
