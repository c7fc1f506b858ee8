"""Prometheus metrics, one registry per app so tests and replicas never collide."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest


@dataclass
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.sessions_active = Gauge(
            "duplex_proxy_sessions_active", "Sessions open now, by mode.", ["mode"], registry=r
        )
        self.sessions_total = Counter(
            "duplex_proxy_sessions_total", "Sessions opened, by mode.", ["mode"], registry=r
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
        self.upstream_reattach = Counter(
            "duplex_proxy_upstream_reattach_total",
            "Upstream sessions reattached after a lost socket or a replica move, by how"
            " (resumed: its own session came back; fresh: a new one).",
            ["how"],
            registry=r,
        )
        self.store_up = Gauge(
            "duplex_proxy_store_up", "1 when the session store answers, else 0.", registry=r
        )
        self.vad_batch_size = Histogram(
            "duplex_proxy_vad_batch_windows",
            "512-sample windows per VAD inference call.",
            buckets=(1, 2, 4, 8, 16, 32, 64, 128),
            registry=r,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
