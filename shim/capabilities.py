"""Classify an upstream session from what it actually sent, and pick the proxy mode.

A duplex upstream answers ``session.created`` with
``session.capabilities`` (vLLM-Omni ``DuplexCapabilities.as_dict``); a turn-based one
sends a flat ``session.created {id, created}`` with no ``session`` object. A connection
that succeeds proves nothing; only these frames do (``docs/protocol.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

UpstreamKind = Literal["duplex", "turn"]
ProxyMode = Literal["passthrough", "barge_in_emulated", "duplex_emulated"]
# Who the client is: ``ga`` speaks OpenAI GA realtime (``/v1/realtime`` without
# ``?duplex=1``), ``native`` vLLM-Omni's duplex protocol (``?duplex=1``, ``/v1/duplex``).
ClientKind = Literal["ga", "native"]
GA_REASON = (
    "GA client: the proxy decides barge-in and acknowledges playback "
    "(GA clients send no playback.ack and stop playback on every speech_started)"
)
GA_PASSTHROUGH_REASON = "GA client relayed byte for byte: the route sets ga_passthrough"

# Capabilities the proxy itself provides in the emulated modes.
EMULATED_FLAGS = (
    "supports_barge_in",
    "supports_playback_ack",
    "supports_audio_truncate",
    "supports_session_resume",
)


@dataclass(frozen=True, slots=True)
class Classification:
    kind: UpstreamKind
    mode: ProxyMode
    upstream_capabilities: Mapping[str, Any] | None
    reasons: tuple[str, ...]
    client: ClientKind = "native"

    @property
    def ga_client(self) -> bool:
        return self.client == "ga"


def client_of(reasons: tuple[str, ...] | list[str]) -> ClientKind:
    """The client kind a stored classification was made for (its reasons say it)."""
    return "ga" if GA_REASON in reasons or GA_PASSTHROUGH_REASON in reasons else "native"


def upstream_kind(created: Mapping[str, Any]) -> UpstreamKind | None:
    """``duplex`` / ``turn`` for a ``session.created`` event, None for anything else."""
    if created.get("type") != "session.created":
        return None
    session = created.get("session")
    if isinstance(session, Mapping):
        return "duplex"
    return "turn"


def capabilities_of(created: Mapping[str, Any]) -> Mapping[str, Any] | None:
    session = created.get("session")
    if isinstance(session, Mapping):
        caps = session.get("capabilities")
        if isinstance(caps, Mapping):
            return caps
    return None


def classify(
    created: Mapping[str, Any],
    forced: str = "auto",
    duplex_refused: bool = False,
    client: ClientKind = "native",
    ga_passthrough: bool = False,
) -> Classification:
    """Decide the mode for a session from the upstream's ``session.created``.

    A GA client over a duplex upstream that can barge in is not relayed byte for
    byte: the upstream's own overlap rules (ack-owned playback, opt-in barge-in,
    speech events for echo and backchannels) are not what a GA client expects, so the
    proxy runs it as ``barge_in_emulated`` unless the route keeps passthrough
    (``ga_passthrough``)."""
    kind = upstream_kind(created)
    if kind is None:
        raise ValueError("not a session.created event")
    caps = capabilities_of(created)
    reasons: list[str] = []
    if duplex_refused:
        reasons.append("upstream refused ?duplex=1 (error code unsupported)")
    if kind == "turn":
        reasons.append("upstream is turn-based: flat session.created without session object")
        auto: ProxyMode = "duplex_emulated"
        if client == "ga":  # said, so a session resumed from the store knows its client
            reasons.append(GA_REASON)
    elif caps is None:
        reasons.append("upstream session.created declares no capabilities")
        auto = "barge_in_emulated"
    elif caps.get("supports_barge_in") is not True:
        reasons.append("upstream declares supports_barge_in=false")
        auto = "barge_in_emulated"
        if client == "ga":
            reasons.append(GA_REASON)
    else:
        reasons.append("upstream declares supports_barge_in=true")
        auto = "passthrough"
        if client == "ga" and not ga_passthrough:
            reasons.append(GA_REASON)
            auto = "barge_in_emulated"
        elif client == "ga":
            # The route's ga_passthrough key (proxy/config_route.py).
            reasons.append(GA_PASSTHROUGH_REASON)
    mode = auto
    if forced != "auto" and forced != auto:
        if kind == "turn" and forced != "duplex_emulated":
            # A turn-based dialect cannot be relayed as duplex; forcing it would lie.
            reasons.append(f"route forces {forced}, impossible over a turn-based upstream")
        else:
            reasons.append(f"route forces mode {forced}")
            mode = forced  # type: ignore[assignment]
    return Classification(
        kind=kind, mode=mode, upstream_capabilities=caps, reasons=tuple(reasons), client=client
    )


# What a session over a turn-based upstream takes, in vLLM-Omni's keys
# (``DuplexCapabilities.as_dict``): audio appended in chunks, nothing else (text-only
# turns and camera frames are refused there: ``shim/dialects/turn_based.py``). No
# ``chunk_period_ms``: such a model has no audio unit; appends of any length are read.
TURN_BASED_INPUT: dict[str, Any] = {
    "supports_input_append": True,
    "input_modes": ["append_audio_chunk"],
    "required_input_modalities": ["audio"],
    "optional_input_modalities": [],
    "supports_image_input": False,
    "supports_text_only_turn": False,
}


def proxy_capabilities(
    cls: Classification, resume_available: bool, barge_in_target_ms: int | None = None
) -> dict[str, Any]:
    """The capabilities object the client sees: the truth about this session via the proxy.

    ``resume_available``: the proxy can resume this session (its store took the
    session, or in passthrough its upstream binding).
    """
    caps: dict[str, Any] = dict(cls.upstream_capabilities or {})
    if cls.mode != "passthrough":
        for flag in EMULATED_FLAGS:
            caps[flag] = True
        caps["supports_session_resume"] = resume_available
        caps["supports_client_commit"] = True
        if cls.kind == "turn":
            # A turn-based upstream tells none of its own.
            caps.update(
                {k: list(v) if isinstance(v, list) else v for k, v in TURN_BASED_INPUT.items()}
            )
        if barge_in_target_ms is not None:
            # The proxy stops the audio itself, so the target is the proxy's.
            caps["target_barge_in_latency_ms"] = barge_in_target_ms
        caps["implementation_level"] = (
            "turn_based_duplex" if cls.kind == "turn" else caps.get("implementation_level")
        )
        if caps["implementation_level"] is None:
            del caps["implementation_level"]
    elif caps.get("supports_session_resume") is True and not resume_available:
        # The upstream can resume, but no replica could find it again (store down).
        caps["supports_session_resume"] = False
    caps["proxy"] = {
        "mode": cls.mode,
        "upstream": dict(cls.upstream_capabilities) if cls.upstream_capabilities else None,
        "reasons": list(cls.reasons),
    }
    return caps
