"""What an unexpected failure inside the shim becomes: never an exception out of
``handle()``, but a coded ``internal_error`` for the client (naming the event) and a
``ReportFault`` for the edge to log. The shim itself never logs (sans-I/O)."""

from __future__ import annotations

import traceback

from shim import wire
from shim.actions import Action, ReportFault, SendClient
from shim.inputs import ClientEvent, Input


def fault_actions(inp: Input, exc: Exception) -> list[Action]:
    event = getattr(inp, "event", None)
    kind = event.get("type") if isinstance(event, dict) else None
    event_type = kind if isinstance(kind, str) else None
    where = f"{type(inp).__name__} {event_type}" if event_type else type(inp).__name__
    event_id = inp.event.get("event_id") if isinstance(inp, ClientEvent) else None
    error = wire.error(
        "internal_error",
        f"the proxy failed to handle {where}",
        event_id=event_id if isinstance(event_id, str) else None,
    )
    trace = "".join(traceback.format_exception(exc))
    return [SendClient(error), ReportFault(type(inp).__name__, event_type, repr(exc), trace)]
