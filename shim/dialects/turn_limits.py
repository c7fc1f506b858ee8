"""What a client may ask that the turn-based dialect has no way to carry.

The turn-based upstream (``shim/dialects/turn_wire.py``) takes a model name and
audio turns, nothing else: no instructions, no tools, no text, no voice, speed or
other generation setting, no per-response options. Asking for one of them over
``duplex_emulated`` is refused when it is sent, with a coded ``error`` naming the
field (``docs/protocol.md``, "Native clients"), and nothing else about the session
changes: the rest of a ``session.update`` applies, a live response goes on.
"""

from __future__ import annotations

from typing import Any

from shim.dialects import ga_generation_options, ga_response_create
from shim.session_config import ClientSessionConfig

UNSUPPORTED = "unsupported_by_upstream"
VIDEO_MESSAGE = (
    "video_frames are not taken: the upstream is turn-based and hears audio only "
    "(the append's audio, if any, is)"
)

# session.update fields the dialect cannot carry; refused only when they ask for
# something, as in response.create (``ga_generation_options.asks``: empty instructions,
# no tools, ``tool_choice`` "auto" or "none" ask for nothing: the upstream takes no
# tools at all).
_SESSION_FIELDS = ("instructions", "tools", "tool_choice")
# Generation settings (GA's, the beta API's and vLLM-Omni's spellings at the top; the
# voice and speed also under audio.output): none reaches a turn-based upstream.
_GENERATION = (
    "voice",
    "speed",
    "temperature",
    "max_output_tokens",
    "max_response_output_tokens",
    "max_tokens",
    "prompt",
    "include",
)
_OUTPUT_GA = ("voice", "speed")
# Input transcription and noise reduction (GA under audio.input, beta at the top).
_INPUT_GA = ("transcription", "noise_reduction")
_INPUT_BETA = ("input_audio_transcription", "input_audio_noise_reduction")
# response.create options that would change the generation; vLLM-Omni refuses the same
# on a runtime without generation overrides (unsupported_native_response_options).
_RESPONSE_FIELDS = (
    "instructions",
    "tools",
    "tool_choice",
    "voice",
    "temperature",
    "max_output_tokens",
    "max_response_output_tokens",
    "input",
    "conversation",
    "prompt",  # refused in session.update too
)


def event_message(kind: Any) -> str:
    if kind == "conversation.item.create":
        return (
            "event type 'conversation.item.create' is not supported over a turn-based "
            "upstream: it takes audio turns only, so text and other items cannot reach it"
        )
    return f"event type {kind!r} is not supported over a turn-based upstream"


def strip_session_fields(
    ev: dict[str, Any], native: bool = False
) -> tuple[dict[str, Any], list[str]]:
    """``ev`` without the fields the dialect cannot carry, and their names as params.

    Input transcription and noise reduction (``shim/session_options.py``) are among
    them: the upstream transcribes no input and reduces no noise. So are a GA client's
    generation settings (``_GENERATION``, the voice and speed also under
    ``audio.output``): vLLM's turn-based session reads only the model from
    ``session.update``, and vLLM-Omni generates with the model's own defaults and
    speaks in its own voice. A ``native`` (vLLM-Omni) client's are taken, unused and
    with no error, as that turn-based server takes them (``docs/fidelity.md``)."""
    nested = isinstance(ev.get("session"), dict)
    session: dict[str, Any] = ev["session"] if nested else ev
    asks = ga_generation_options.asks
    fields = (*_SESSION_FIELDS, *_INPUT_BETA, *(() if native else _GENERATION))
    refused = [k for k in fields if k in session and asks(k, session[k])]
    audio = session.get("audio")
    a_in = audio.get("input") if isinstance(audio, dict) else None
    a_out = audio.get("output") if isinstance(audio, dict) else None
    inner = [k for k in _INPUT_GA if isinstance(a_in, dict) and a_in.get(k) is not None]
    output = () if native else _OUTPUT_GA
    said = [k for k in output if isinstance(a_out, dict) and asks(k, a_out.get(k))]
    if not refused and not inner and not said:
        return ev, []
    kept = {k: v for k, v in session.items() if k not in refused}
    if isinstance(audio, dict):
        kept["audio"] = dict(audio)
        if inner and isinstance(a_in, dict):
            kept["audio"]["input"] = {k: v for k, v in a_in.items() if k not in inner}
        if said and isinstance(a_out, dict):
            kept["audio"]["output"] = {k: v for k, v in a_out.items() if k not in said}
    stripped = {**ev, "session": kept} if nested else kept
    params = [f"session.{k}" if nested else k for k in refused]
    params += [f"session.audio.input.{k}" for k in inner]
    return stripped, params + [f"session.audio.output.{k}" for k in said]


def session_field_message(param: str) -> str:
    return (
        f"{param} is not applied: the upstream is turn-based and takes only a model name "
        "and audio turns (it transcribes no input, reduces no noise, and answers in its "
        "own voice with its own generation settings)"
    )


def refused_response_option(ev: dict[str, Any]) -> str | None:
    """The first ``response.create`` option the dialect cannot honour, as a param."""
    options = ev.get("response")
    if not isinstance(options, dict):
        return None
    for key in _RESPONSE_FIELDS:  # (as GA has it: max_output_tokens "inf" asks nothing)
        if key in options and ga_generation_options.asks(key, options[key]):
            return f"response.{key}"
    return None


def response_option_message(param: str) -> str:
    return (
        f"{param} cannot be honoured over a turn-based upstream (it takes audio turns "
        "only); no response was created"
    )


def empty_commit(native_client: bool) -> tuple[str, str]:
    """The code and message for a commit of an empty buffer: GA's, or, to a native
    client (``?duplex=1``, ``/v1/duplex``), vLLM-Omni's own (``docs/protocol.md``)."""
    if native_client:
        return (
            "input_audio_buffer_empty",
            "input_audio_buffer.commit requires a non-empty input audio buffer",
        )
    return "input_audio_buffer_commit_empty", "the input audio buffer is empty"


def create_refusal(
    ev: dict[str, Any], cfg: ClientSessionConfig
) -> tuple[tuple[str, str, str | None] | None, dict[str, str] | None]:
    """Why a ``response.create`` gets no response (code, message, param), or None:
    an option the dialect cannot honour (as over a duplex upstream, text-only output
    or another output format: ``ga_response_create.py``); and the metadata it names,
    told back with its response. An answer in progress or no turn to answer is
    refused in the client's own protocol (``turn_refusals.py``)."""
    option = refused_response_option(ev)
    if option is not None:
        return (UNSUPPORTED, response_option_message(option), option), None
    try:
        metadata = ga_response_create.screened(ev, cfg)[1]
    except ga_response_create.Refusal as no:
        return (no.code, str(no), no.param), None
    return None, metadata
