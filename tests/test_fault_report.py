"""A shim fault reaches the edge's log and metrics: what failed and where, never the event."""

from __future__ import annotations

import structlog
from structlog.testing import capture_logs

from proxy.emulated.faults import fault_label, report_fault
from proxy.logging import get_logger
from proxy.metrics import Metrics
from shim.actions import ReportFault
from shim.dialects.turn_based import TurnBasedSession
from shim.fault import fault_actions
from shim.inputs import ClientEvent, VadWindow
from shim.session import ShimSettings
from shim.vad_gate import VadParams


def fault_count(metrics: Metrics, event_type: str) -> float:
    value = metrics.registry.get_sample_value(
        "duplex_proxy_shim_faults_total", {"event_type": event_type}
    )
    return value or 0.0


def test_a_real_shim_fault_is_logged_at_error_with_its_trace_and_counted() -> None:
    shim = TurnBasedSession("sess_fault", "m", "m-up", ShimSettings(vad=VadParams()))
    # A VAD window that goes back in time is an edge bug: the shim's gate refuses it.
    for n in range(1, 11):
        shim.handle(VadWindow(0.05, 512 * n, 32.0 * n))
    (fault,) = [a for a in shim.handle(VadWindow(0.9, 512, 400.0)) if isinstance(a, ReportFault)]
    metrics = Metrics()
    with capture_logs() as logs:
        report_fault(get_logger(session_id="sess_fault"), metrics, "sess_fault", fault)
    (entry,) = logs
    assert entry["log_level"] == "error" and entry["event"] == "shim_fault"
    assert entry["session_id"] == "sess_fault"
    assert entry["input_kind"] == "VadWindow" and entry["event_type"] is None
    assert "Traceback" in entry["trace"] and entry["error"]
    assert fault_count(metrics, "none") == 1


def test_a_fault_on_a_client_event_logs_its_type_but_not_its_audio() -> None:
    audio = "QUJDREVGR0g" * 50
    event = {"type": "input_audio_buffer.append", "audio": audio, "event_id": "evt_1"}
    (fault,) = [
        a
        for a in fault_actions(ClientEvent(event, "{}", 0.0), RuntimeError("boom"))
        if isinstance(a, ReportFault)
    ]
    metrics = Metrics()
    with capture_logs() as logs:
        report_fault(structlog.get_logger().bind(), metrics, "sess_a", fault)
    (entry,) = logs
    assert entry["event_type"] == "input_audio_buffer.append"
    assert entry["input_kind"] == "ClientEvent"
    assert audio not in repr(entry)
    assert fault_count(metrics, "input_audio_buffer.append") == 1


def test_an_event_type_no_protocol_event_has_is_not_a_label_of_its_own() -> None:
    assert fault_label("response.create") == "response.create"
    assert fault_label(None) == "none"
    assert fault_label("X" * 500) == "other"
    assert fault_label("a b") == "other"
