"""Prometheus metrics, one registry per app so tests and replicas never collide.

Under ``serve --workers N`` (``proxy/workers.py``) every worker writes its values into
the directory ``PROMETHEUS_MULTIPROC_DIR`` names, and ``render`` answers with the sum
over all workers (``prometheus_client``'s multiprocess mode): counters and histograms
add up, the session gauge adds up over the workers alive, and the up/draining gauges
show the highest value of any worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

# Labels of the session metrics. ``route`` is the route's pattern from the config and
# ``model`` the route's upstream model (or the pattern): both come from the config, never
# from what a client asked for, so the number of series stays bounded.
SESSION_LABELS = ("mode", "route", "model")
# Latencies a person notices in a conversation: tens of milliseconds to a few seconds.
LATENCY_BUCKETS = (0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)
# One VAD inference, or the wait for it: well under a window (32 ms) when healthy.
# 0.1: the decision lag a live session can take (bench/sessions.py's limit).
VAD_BUCKETS = (0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.1, 0.128, 0.256)
# How often each process sets its asyncio tasks gauge (the /metrics answer of the
# process asked is always fresh; the other workers' figures are at most this old).
TASKS_SAMPLE_S = 5.0


@dataclass
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.sessions_active = Gauge(
            "duplex_proxy_sessions_active",
            "Sessions open now, by mode, route and model.",
            SESSION_LABELS,
            registry=r,
            multiprocess_mode="livesum",
        )
        self.sessions_total = Counter(
            "duplex_proxy_sessions_total",
            "Sessions opened, by mode, route and model.",
            SESSION_LABELS,
            registry=r,
        )
        self.frames = Counter(
            "duplex_proxy_frames_total",
            "WebSocket frames relayed, by direction (client_to_upstream, upstream_to_client).",
            ["direction"],
            registry=r,
        )
        self.bytes = Counter(
            "duplex_proxy_bytes_total",
            "Payload bytes relayed, by direction.",
            ["direction"],
            registry=r,
        )
        self.upstream_errors = Counter(
            "duplex_proxy_upstream_errors_total",
            "Upstream failures, by kind (connect, refused, protocol, closed).",
            ["kind"],
            registry=r,
        )
        self.client_errors = Counter(
            "duplex_proxy_client_errors_total",
            "Error events sent to clients, by code.",
            ["code"],
            registry=r,
        )
        self.barge_ins = Counter(
            "duplex_proxy_barge_ins_total",
            "Barge-ins performed by the proxy, by mode.",
            ["mode"],
            registry=r,
        )
        self.responses = Counter(
            "duplex_proxy_responses_total",
            "Responses ended in emulated modes, by mode and status.",
            ["mode", "status"],
            registry=r,
        )
        self.response_ends_unsaved = Counter(
            "duplex_proxy_response_ends_unsaved_total",
            "Response ends sent to the client before the store held them (timeout: the"
            " store was slow; not_saving: down, or the session is not persisted; over_cap:"
            " too much held behind them), or withheld from a drained client (withheld).",
            ["mode", "reason"],
            registry=r,
        )
        self.shim_faults = Counter(
            "duplex_proxy_shim_faults_total",
            "Inputs the shim failed to handle (a bug; the client got internal_error), by"
            " event type.",
            ["event_type"],
            registry=r,
        )
        self.resumes = Counter(
            "duplex_proxy_resumes_total", "session.resume outcomes.", ["outcome"], registry=r
        )
        self.passthrough_rebinds = Counter(
            "duplex_proxy_passthrough_rebinds_total",
            "Passthrough resumes whose upstream gave out a new token, by how the store took"
            " it (landed; landed_late: after retries; failed: refused until the session's"
            " grace ended, so it cannot be resumed through the proxy again; superseded:"
            " another resume took the session first).",
            ["outcome"],
            registry=r,
        )
        self.upstream_reattach = Counter(
            "duplex_proxy_upstream_reattach_total",
            "Upstream sessions reattached after a lost socket or a replica move, by how"
            " (resumed: its own session came back; fresh: a new one).",
            ["how"],
            registry=r,
        )
        self.store_up = Gauge(
            "duplex_proxy_store_up",
            "1 when the session store answers, else 0.",
            registry=r,
            multiprocess_mode="livemax",
        )
        self._latencies(r)
        self._operations(r)

    def _latencies(self, r: CollectorRegistry) -> None:
        self.time_to_first_audio = Histogram(
            "duplex_proxy_time_to_first_audio_seconds",
            "End of the user's turn (input committed) to the first assistant audio sent to"
            " the client, emulated modes, by mode.",
            ["mode"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.barge_in_stop = Histogram(
            "duplex_proxy_barge_in_stop_seconds",
            "Speech onset over a reply to the last assistant audio sent before the cut, by"
            " mode (what vad.target_barge_in_latency_ms declares).",
            ["mode"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.upstream_dial = Histogram(
            "duplex_proxy_upstream_dial_seconds",
            "Opening an upstream session for a new client: connect and its first answer.",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.resume_time = Histogram(
            "duplex_proxy_resume_seconds",
            "A successful session.resume: request to the session taken over here.",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.vad_batch_size = Histogram(
            "duplex_proxy_vad_batch_windows",
            "512-sample windows per VAD inference call.",
            buckets=(1, 2, 4, 8, 16, 32, 64, 128),
            registry=r,
        )
        self.vad_inference = Histogram(
            "duplex_proxy_vad_inference_seconds",
            "Wall time of one batched Silero inference call.",
            buckets=VAD_BUCKETS,
            registry=r,
        )
        self.vad_lag = Histogram(
            "duplex_proxy_vad_decision_lag_seconds",
            "A VAD window queued to its probability known (queueing plus inference).",
            buckets=VAD_BUCKETS,
            registry=r,
        )

    def _operations(self, r: CollectorRegistry) -> None:
        self.route_up = Gauge(
            "duplex_proxy_route_up",
            "1 when the route's upstream answered its last readiness check, by route.",
            ["route"],
            registry=r,
            multiprocess_mode="livemax",
        )
        self.draining = Gauge(
            "duplex_proxy_draining",
            "1 once SIGTERM was received (drain).",
            registry=r,
            multiprocess_mode="livemax",
        )
        # Set by sampling (``sample_tasks``), not read at scrape time: a callback gauge
        # is not written to the multiprocess files, so under workers it was missing.
        self.tasks = Gauge(
            "duplex_proxy_asyncio_tasks",
            "asyncio tasks alive now (a leak grows), summed over the workers.",
            registry=r,
            multiprocess_mode="livesum",
        )
        self._sampler: asyncio.TimerHandle | None = None
        self.config_reloads = Counter(
            "duplex_proxy_config_reloads_total",
            "Config reloads (SIGHUP or a changed file), by outcome (applied, refused).",
            ["outcome"],
            registry=r,
        )

    def start_sampling(self, every_s: float = TASKS_SAMPLE_S) -> None:
        """Set the tasks gauge now and every ``every_s`` until ``stop_sampling`` (a
        timer, not a task: the sampler does not count itself)."""
        self.tasks.set(_tasks_alive())
        loop = asyncio.get_running_loop()
        self._sampler = loop.call_later(every_s, self.start_sampling, every_s)

    def stop_sampling(self) -> None:
        if self._sampler is not None:
            self._sampler.cancel()
            self._sampler = None

    def render(self) -> bytes:
        with contextlib.suppress(RuntimeError):  # this process's figure, fresh
            asyncio.get_running_loop()
            self.tasks.set(_tasks_alive())
        path = os.environ.get(MULTIPROC_ENV)
        if not path:
            return generate_latest(self.registry)
        merged = CollectorRegistry()
        MultiProcessCollector(merged, path)  # type: ignore[no-untyped-call]
        return generate_latest(merged)


def _tasks_alive() -> float:
    return float(len(asyncio.all_tasks()))


class FrameTally:
    """Frames and bytes relayed in one direction, added to the counters in batches.

    A counter increment takes a lock; two per frame were a measurable share of a
    relayed frame's cost (bench/relay.py). The tally is added every ``every`` frames
    and at ``flush()``, which the owner calls when its session ends."""

    __slots__ = ("_bytes", "_every", "_frames", "_n", "_size")

    def __init__(self, metrics: Metrics, direction: str, every: int = 32) -> None:
        self._frames = metrics.frames.labels(direction)
        self._bytes = metrics.bytes.labels(direction)
        self._n = self._size = 0
        self._every = every

    def add(self, size: int) -> None:
        self._n += 1
        self._size += size
        if self._n >= self._every:
            self.flush()

    def flush(self) -> None:
        if self._n:
            self._frames.inc(self._n)
            self._bytes.inc(self._size)
            self._n = self._size = 0
