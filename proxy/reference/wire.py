"""Wire encoding shared by the reference backends: ids, JSON, the three error shapes.

vLLM-Omni 0.30.0 speaks three error dialects and a faithful stand-in must not
mix them up (``docs/fidelity.md``, row 14):

* pre-session route refusals: ``{"type":"error","code":..,"error":"<string>"}`` or
  ``{"type":"error","error":"<string>","code":..}`` -- key order as the source writes it;
* the duplex envelope:
  ``{"type":"error","event_id":..,"error":{type,code,message,[event_id],[param]}}``;
* the turn-based connection: ``{"type":"error","error":"<string>","code":..}``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping

import orjson

#: ``error.type`` for the codes that are not ``invalid_request_error``
#: (``protocol/duplex/errors.py::REALTIME_ERROR_TYPES_BY_CODE``).
_ERROR_TYPES = {
    "internal_error": "server_error",
    "runtime_append_failed": "server_error",
    "runtime_append_task_failed": "server_error",
    "runtime_signal_failed": "server_error",
    "runtime_abort_failed": "server_error",
    "runtime_touch_failed": "server_error",
    "engine_error": "server_error",
    "commit_aborted": "server_error",
    "server_vad_unavailable": "server_error",
    "resource_exhausted": "rate_limit_error",
    "input_backpressure": "rate_limit_error",
}

#: ``?duplex=`` selects the duplex handler only for these (no "yes": api_server.py).
DUPLEX_TRUE = frozenset({"1", "true", "on"})
#: ``?resume=`` disables autostart for these (realtime_input.py ``_TRUE_VALUES``).
RESUME_TRUE = frozenset({"1", "true", "yes", "on"})
#: ``?autostart=`` is off for these (realtime_input.py ``_FALSE_VALUES``).
AUTOSTART_FALSE = frozenset({"0", "false", "no", "off"})


def dumps(payload: Mapping[str, object]) -> str:
    """Compact JSON, key order kept, non-ASCII kept (Starlette ``send_json``), integers
    of any size included: a client's number past 64 bits told back (an ack's
    ``played_ms`` of 1e20) is written as Starlette's ``json.dumps`` writes it."""
    try:
        return orjson.dumps(payload).decode("utf-8")
    except TypeError:  # an integer past 64 bits
        return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


def dumps_spaced(payload: Mapping[str, object]) -> str:
    """``json.dumps`` defaults: vLLM-Omni's turn-based audio events are sent this way."""
    return json.dumps(payload)


def new_event_id() -> str:
    return f"event_{uuid.uuid4().hex}"


def error_type(code: str) -> str:
    return _ERROR_TYPES.get(code, "invalid_request_error")


def duplex_error(
    code: str,
    message: str,
    *,
    event_id: object = None,
    param: str | None = None,
) -> dict[str, object]:
    """The duplex error envelope; ``event_id`` is the client's, kept only when a non-empty str."""
    error: dict[str, object] = {"type": error_type(code), "code": code, "message": message}
    if isinstance(event_id, str) and event_id:
        error["event_id"] = event_id
    if param:
        error["param"] = param
    return {"type": "error", "event_id": new_event_id(), "error": error}


def turn_error(message: str, code: str) -> dict[str, object]:
    """Upstream vLLM ``ErrorEvent(error=message, code=code)``."""
    return {"type": "error", "error": message, "code": code}


#: ``?duplex=1`` on a server without a duplex adapter (sent before close 1008).
VAD_NOT_ENABLED: dict[str, object] = {
    "type": "error",
    "code": "unsupported",
    "error": "VAD realtime is not enabled",
}
#: ``/v1/realtime`` on a duplex server reached with a falsy ``duplex`` (then close 1000).
REALTIME_NOT_AVAILABLE: dict[str, object] = {
    "type": "error",
    "error": "Realtime API is not available",
    "code": "unsupported",
}
#: ``/v1/duplex`` on a server without a duplex adapter (then close 1000).
DUPLEX_NOT_AVAILABLE: dict[str, object] = {
    "type": "error",
    "error": "Duplex API is not available",
    "code": "unsupported",
}


def query_in(value: str | None, accepted: frozenset[str], *, strip: bool = True) -> bool:
    """Query truthiness; ``duplex`` is compared unstripped (api_server.py), the rest stripped."""
    if value is None:
        return False
    return (value.strip() if strip else value).lower() in accepted
