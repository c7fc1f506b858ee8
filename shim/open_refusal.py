"""What an upstream's refusal to open a session means for a GA client: its error
``type`` and its close code, and the bounded metric label it is counted under.

vLLM-Omni types every code its table does not name as ``invalid_request_error``
(``protocol/duplex/errors.py``, ``realtime_error_type``), and most of those are the
session's fault: a plugin's own refusal of the config asked for reaches the opening
with its own code (MiniCPM-o's ``invalid_sliding_window_config``, through the session
manager's ``_control_error``), as do codes the table names ``invalid_request_error``
(``bad_audio``, ``invalid_video_frames``, ...). But its server failures at open are
typed so too: the engine RPC timing out (``timeout``, retryable), any unexpected
exception (``failed_precondition``), a dead or full engine (``engine_dead``,
``engine_backpressure``). Its own flat refusals (``{type: error, error: "...", code:
"unsupported"}``: the API is not served there) name no type at all. So an
``invalid_request_error`` is the session's, retrying the same cannot help, unless its
code is one the server fails with (``SERVER_FAILED``): a code the proxy does not know
is taken at the upstream's word.
"""

from __future__ import annotations

#: Codes vLLM-Omni refuses an opening with because of the session asked for (a GA
#: client is closed 1000). Named here for the metric's labels only: any code outside
#: ``SERVER_FAILED`` is typed as one of these.
SESSION_REFUSED = frozenset(
    {
        "bad_event",
        "bad_audio",
        "unknown_event",
        "invalid_session_config",
        "invalid_argument",
        "invalid_duplex_runtime_config",
        "invalid_sliding_window_config",
        "sliding_window_update_unsupported",
        "invalid_input_modality",
        "invalid_video_frames",
        "invalid_image",
        "ref_audio_required",
        "unsupported_ref_audio_path",
        "unsupported_audio_format",
        "unsupported_turn_detection",
        "unsupported_nemotron_duplex_mode",
        "unsupported_native_response_options",
        "instructions_update_unsupported",
        "persona_update_unsupported",
        "voice_update_unsupported",
        "voice_update_after_audio_unsupported",
        "ref_audio_update_unsupported",
        "model_update_unsupported",
    }
)

#: The server's own failures at open: a GA client is told ``server_error`` (or the
#: upstream's other type) and closed 1011, whatever type vLLM-Omni gave them.
SERVER_FAILED = frozenset(
    {
        # The engine and session manager failing (engine/duplex_omni_engine.py,
        # session/manager.py ``_control_error``): none is about the session asked for.
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
        "session_resume_conflict",
        # Typed server_error (or rate_limit_error) in vLLM-Omni's table.
        "runtime_append_failed",
        "runtime_append_task_failed",
        "runtime_signal_failed",
        "runtime_abort_failed",
        "runtime_touch_failed",
        "runtime_data_plane_stream_failed",
        "runtime_data_plane_text_without_audio",
        "commit_aborted",
        "server_vad_unavailable",
        "resource_exhausted",
        "input_backpressure",
        # The upstream's answer to the frame the proxy itself writes: the proxy builds
        # the opening ``session.update`` and sends it at once, as JSON, one text frame
        # within the proxy's own frame limit. vLLM-Omni types these
        # ``invalid_request_error``, but at open they say the proxy's side failed to
        # deliver it (late, garbled or cut on the way), never that the session the
        # client asked for is refused: a retry can succeed.
        "config_timeout",
        "invalid_json",
        "event_too_large",
        "realtime_input_failed",
        # The API, or this kind of it, not served on that upstream: another may.
        "unsupported",
        "multi_api_duplex_unsupported",
        # The proxy's own code for a refusal that named none.
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
    failure it was: the upstream's ``invalid_request_error`` (explicit, or none named)
    stays so unless its code is a server failure (``SERVER_FAILED``), which is
    ``server_error``; any other type the upstream named is kept."""
    if upstream_type and not ga:
        return upstream_type
    if upstream_type and upstream_type != "invalid_request_error":
        return upstream_type
    return "server_error" if code in SERVER_FAILED else "invalid_request_error"


def ga_close_code(kind: str) -> int:
    """A GA client's close after the refusal: 1000 when the session it asked for was
    refused (retrying the same cannot help), 1011 when the server failed."""
    return 1000 if kind == "invalid_request_error" else 1011
