"""What an upstream's refusal to open a session means for a GA client: its error
``type`` and its close code, and the bounded metric label it is counted under.

vLLM-Omni types every code its table does not name as ``invalid_request_error``
(``protocol/duplex/errors.py``, ``realtime_error_type``), server failures at open
included: the engine RPC timing out (``timeout``, retryable), any unexpected exception
(``failed_precondition``), a dead or full engine (``engine_dead``,
``engine_backpressure``). Its own flat refusals (``{type: error, error: "...", code:
"unsupported"}``: the API is not served there) name no type at all. So the type alone
does not say whether the session the client asked for was refused: the code does.
"""

from __future__ import annotations

#: Codes vLLM-Omni refuses an opening with because of the session asked for: retrying
#: the same cannot help (a GA client is closed 1000). Every other code is the server's.
SESSION_REFUSED = frozenset(
    {
        "bad_event",
        "invalid_session_config",
        "invalid_argument",
        "invalid_duplex_runtime_config",
        "invalid_input_modality",
        "ref_audio_required",
        "unsupported_ref_audio_path",
        "unsupported_audio_format",
        "unsupported_turn_detection",
        "unsupported_nemotron_duplex_mode",
        "unsupported_native_response_options",
        "instructions_update_unsupported",
        "persona_update_unsupported",
        "voice_update_unsupported",
        "model_update_unsupported",
    }
)

#: The server's own failures at open, and other codes an opening may be refused with.
SERVER_FAILED = frozenset(
    {
        "timeout",
        "failed_precondition",
        "engine_error",
        "engine_dead",
        "engine_backpressure",
        "internal_error",
        "stale_fence",
        "not_found",
        "session_exists",
        "session_closed",
        "unknown_session",
        "config_timeout",
        "invalid_json",
        "event_too_large",
        "realtime_input_failed",
        "unsupported",
        "multi_api_duplex_unsupported",
        "server_vad_unavailable",
        "resource_exhausted",
        "upstream_refused",
    }
)

#: The label every code outside the two sets is counted under: an upstream names its
#: codes, so the metric's label values must not be its to choose.
OTHER_LABEL = "upstream_other"


def metric_label(code: str) -> str:
    """``code`` as a ``client_errors`` label: itself if known, else ``OTHER_LABEL``."""
    return code if code in SESSION_REFUSED or code in SERVER_FAILED else OTHER_LABEL


def refusal_type(code: str, upstream_type: str | None, ga: bool) -> str:
    """The error ``type`` the client is told. A native client gets the upstream's
    own where it named one, as vLLM-Omni's client would; a GA client's says whose
    failure it was: ``invalid_request_error`` only for a refusal of the session asked
    for, an upstream's default ``invalid_request_error`` for any other code being
    ``server_error``. A refusal that named no type gets one by its code."""
    if upstream_type and not ga:
        return upstream_type
    if upstream_type and upstream_type != "invalid_request_error":
        return upstream_type
    return "invalid_request_error" if code in SESSION_REFUSED else "server_error"


def ga_close_code(kind: str) -> int:
    """A GA client's close after the refusal: 1000 when the session it asked for was
    refused (retrying the same cannot help), 1011 when the server failed."""
    return 1000 if kind == "invalid_request_error" else 1011
