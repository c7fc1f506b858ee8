"""The latency histograms: observed where the events happen, on a real barge-in."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.latency import TurnLatency
from proxy.metrics import Metrics
from tests.metrics_scrape import scrape, value
from tests.realtime_mic import speak_over_the_answer
from tests.resume_client import created, resumed
from tests.servers import connect, proxy, proxy_config, reference, ws_url


def count(metrics: Metrics, name: str, **labels: str) -> float:
    got = metrics.registry.get_sample_value(f"{name}_count", labels)
    return got or 0.0


def feed(latency: TurnLatency, *events: dict[str, Any]) -> None:
    for event in events:
        latency.sent(event)


DELTA = {"type": "response.output_audio.delta"}
CREATED = {"type": "response.created"}
STARTED = {"type": "input_audio_buffer.speech_started"}
STOPPED = {"type": "input_audio_buffer.speech_stopped"}


def done(reason: str | None) -> dict[str, Any]:
    status = "cancelled" if reason else "completed"
    return {
        "type": "response.done",
        "response": {"status": status, "status_details": {"reason": reason}},
    }


def test_first_audio_is_timed_once_per_turn_and_a_cut_from_its_onset() -> None:
    metrics = Metrics()
    latency = TurnLatency(metrics, "duplex_emulated")
    feed(latency, {"type": "input_audio_buffer.committed"}, CREATED, DELTA, DELTA)
    assert count(metrics, "duplex_proxy_time_to_first_audio_seconds", mode="duplex_emulated") == 1
    # A backchannel: speech starts and stops over the reply, which completes.
    feed(latency, STARTED, DELTA, STOPPED, DELTA, done(None))
    assert count(metrics, "duplex_proxy_barge_in_stop_seconds", mode="duplex_emulated") == 0
    # A barge-in: speech starts over the next reply, which is cut.
    feed(latency, {"type": "input_audio_buffer.committed"}, CREATED, DELTA, STARTED, DELTA)
    feed(latency, done("turn_detected"))
    assert count(metrics, "duplex_proxy_time_to_first_audio_seconds", mode="duplex_emulated") == 2
    assert count(metrics, "duplex_proxy_barge_in_stop_seconds", mode="duplex_emulated") == 1
    # Speech between replies is a turn, not a barge-in.
    feed(latency, STARTED, STOPPED, done("turn_detected"))
    assert count(metrics, "duplex_proxy_barge_in_stop_seconds", mode="duplex_emulated") == 1


@pytest.mark.slow
async def test_a_real_barge_in_and_resume_fill_every_latency_histogram() -> None:
    mode = "duplex_emulated"
    async with (
        reference("turn", reply_ms=6000) as upstream,
        proxy(proxy_config({"m": upstream})) as base,
    ):
        async with connect(ws_url(base)) as c:
            await c.send({"type": "session.update", "session": {"type": "realtime"}})
            s = await created(c)
            ev = await speak_over_the_answer(c, "utt03_clean.wav")
            assert ev["response"]["status_details"]["reason"] == "turn_detected", ev
            s.take(c)
        async with connect(ws_url(base)) as c2:
            await resumed(c2, s)
        samples = await scrape(base)

    def n(name: str, **labels: str) -> float:
        return value(samples, f"duplex_proxy_{name}_count", **labels)

    assert n("time_to_first_audio_seconds", mode=mode) >= 1
    assert n("barge_in_stop_seconds", mode=mode) == 1
    assert n("upstream_dial_seconds") >= 1
    assert n("resume_seconds") == 1
    assert n("vad_inference_seconds") > 0
    assert n("vad_decision_lag_seconds") > 0
    assert n("vad_batch_windows") > 0
