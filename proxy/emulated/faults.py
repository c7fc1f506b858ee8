"""A fault inside the shim (``shim.actions.ReportFault``): logged and counted.

The shim already sent the client a coded ``internal_error`` and the session goes
on; the edge keeps the evidence. The log carries what failed and where (the input's
kind, the event's type, the exception and its traceback), never the event itself:
no audio, no tokens.
"""

from __future__ import annotations

import re

from proxy.logging import Logger
from proxy.metrics import Metrics
from shim.actions import ReportFault

# Bounds on what one fault puts in the log.
MAX_ERROR_CHARS = 500
MAX_TRACE_CHARS = 8000
# Event types become a metric label: only names shaped like the protocol's own.
_EVENT_TYPE = re.compile(r"[a-z0-9_.]{1,64}")


def fault_label(event_type: str | None) -> str:
    """The ``event_type`` label: the event's type, ``none`` without one, ``other`` for a
    type no protocol event could have (so a client cannot mint labels)."""
    if event_type is None:
        return "none"
    return event_type if _EVENT_TYPE.fullmatch(event_type) else "other"


def report_fault(log: Logger, metrics: Metrics, session_id: str, fault: ReportFault) -> None:
    metrics.shim_faults.labels(fault_label(fault.event_type)).inc()
    log.error(
        "shim_fault",
        session_id=session_id,
        input_kind=fault.input_kind,
        event_type=fault.event_type,
        error=fault.error[:MAX_ERROR_CHARS],
        trace=fault.trace[-MAX_TRACE_CHARS:],
    )
