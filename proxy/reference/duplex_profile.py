"""What a duplex session says about itself: capabilities and the ``session`` object.

Capabilities are ``DuplexCapabilities.as_dict()`` (every key, in its order:
``engine/duplex/config.py``) with the values of the presets the two duplex
kinds stand in for: kind "duplex" is MiniCPM-o 4.5 (barge-in, truncate), kind
"duplex-no-barge-in" is Nemotron VoiceChat (hears overlap, cannot cut itself);
a named model profile (``model_profiles.py``) overrides what its preset says.

The ``session`` object is ``as_public_dict()`` plus every other key the client
sent except ``extra_body`` (echoed, ``ref_audio`` included), and for
``session.created``/``session.updated`` the ``realtime_session_payload``
defaults.
"""

from __future__ import annotations

from collections.abc import Mapping

from proxy.reference.duplex_formats import InputDefaults, audio_format_object
from proxy.reference.options import ReferenceOptions


def capabilities(kind: str, options: ReferenceOptions) -> dict[str, object]:
    profile = options.model_profile
    barge_in = options.barge_in_for(kind)
    limit = options.session_limit
    # Every preset derives multi-session support from max_sessions (serving_adapter.py);
    # the proxy reads it to know its upstream capacity (proxy/upstream_book.py).
    multi = limit is None or limit > 1
    return {
        "supports_session_adapter": True,
        "supports_model_native_turn_policy": True,
        "supports_external_turn_signal": barge_in,
        "supports_client_commit": profile.client_commit,
        "supports_barge_in": barge_in,
        "supports_playback_ack": True,
        "supports_input_append": True,
        "supports_replace_latest_chunk": False,
        "supports_reencode_context": False,
        "supports_rollback_to_checkpoint": False,
        "supports_turn_commit_only": False,
        "supports_kv_lease": False,
        "supports_core_kv_lease": False,
        "supports_model_internal_state": True,
        "supports_stage_resumption": True,
        "supports_scheduler_native_append": False,
        "supports_core_resumable_request": True,
        "supports_concurrent_turn_requests": False,
        "required_input_modalities": ["audio"],
        "optional_input_modalities": ["video"],
        "supports_stage_connector_handoff": True,
        "supports_independent_io_streams": True,
        "supports_realtime_endpoint": True,
        "supports_multi_session": multi,
        "supports_multi_session_same_replica": multi,
        "supports_session_lease": True,
        "supports_session_resume": profile.session_resume,
        "session_admission_mode": "engine_managed",
        "supports_audio_truncate": barge_in,
        "supports_image_input": False,
        "supports_text_only_turn": profile.text_only_turn,
        "requires_model_runner_kv": True,
        "requires_native_stage_role": True,
        "implementation_level": "model_native_duplex",
        "adapter_patterns": ["scheduler_data_plane"],
        "input_modes": ["append_audio_chunk"],
        "signal_sources": (
            ["model_native", "client_event", "server_policy"]
            if barge_in
            else ["model_native", "client_event"]
        ),
        "stage_handoff_transport": "scheduler_data_plane",
        "chunk_period_ms": options.chunk_ms_for(kind),
        "target_barge_in_latency_ms": (
            options.target_barge_in_latency_ms
            if barge_in and profile.declares_latency_target
            else None
        ),
    }


def realtime_session_payload(
    public: Mapping[str, object], defaults: InputDefaults
) -> dict[str, object]:
    """``realtime_events.py::realtime_session_payload``: GA defaults for created/updated."""
    payload = dict(public)
    payload.setdefault("object", "realtime.session")
    payload.setdefault("type", "realtime")
    payload.setdefault("input_audio_format", defaults.fmt)
    payload.setdefault("output_audio_format", defaults.output_fmt)
    payload.setdefault("modalities", payload.get("modalities") or ["text", "audio"])
    payload.setdefault(
        "output_modalities", payload.get("output_modalities") or payload.get("modalities")
    )
    payload.setdefault(
        "audio",
        {
            "input": {
                "format": audio_format_object(defaults.fmt, defaults.rate_hz),
                "sample_rate_hz": defaults.rate_hz,
            },
            "output": {"format": audio_format_object(defaults.output_fmt, None)},
        },
    )
    payload.setdefault("turn_detection", None)
    payload.setdefault("input_audio_transcription", None)
    payload.setdefault("tracing", None)
    return payload
