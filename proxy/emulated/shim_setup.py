"""Which shim an emulated session runs, with which settings, and the
``session.created`` its client is greeted with."""

from __future__ import annotations

from typing import Any

from proxy.client_frames import ClientFrame
from proxy.config_route import Route
from proxy.state import ProxyState
from shim.actions import Action
from shim.capabilities import Classification, proxy_capabilities
from shim.dialects import ga_session_update
from shim.dialects.duplex_relay import BargeInRelaySession
from shim.dialects.ga_relay import GaRelaySession
from shim.dialects.turn_based import TurnBasedSession
from shim.native_formats import as_the_proxy_reads
from shim.native_session_object import resumed_over_upstream, upstream_turn_detection
from shim.session import EmulatedSession, ShimSettings
from shim.session_config import session_object
from shim.session_told import relayed
from shim.vad_gate import VadParams


def shim_settings(state: ProxyState) -> ShimSettings:
    v = state.config.vad
    return ShimSettings(
        vad=VadParams(
            threshold=v.threshold,
            prefix_padding_ms=v.prefix_padding_ms,
            silence_duration_ms=v.silence_duration_ms,
            min_speech_ms=v.min_speech_ms,
        ),
        barge_in_decision_ms=v.barge_in_decision_ms,
        min_barge_in_ms=v.min_barge_in_ms,
        hold_min_speech_ms=v.hold_min_speech_ms,
        echo_suppression=v.echo_suppression,
        overlap_keep_ms=v.overlap_keep_ms,
        background_pause_ms=v.background_pause_ms,
    )


def new_shim(
    state: ProxyState,
    session_id: str,
    cls: Classification,
    model: str,
    upstream_model: str,
    route: Route | None = None,
) -> EmulatedSession:
    """The turn-based dialect for a turn upstream, else the barge-in relay (a GA
    client's told what the route opens its upstream session with)."""
    settings = shim_settings(state)
    if cls.kind == "turn":
        native = not cls.ga_client
        return TurnBasedSession(session_id, model, upstream_model, settings, native_client=native)
    if cls.ga_client:
        ga = GaRelaySession(session_id, model, settings, cls.upstream_capabilities)
        if route is not None:
            ga.upstream_audio.stated(route.session_defaults, opening=True)
        return ga
    return BargeInRelaySession(session_id, model, settings, cls.upstream_capabilities)


def apply_opening(shim: EmulatedSession, event: dict[str, Any]) -> list[Action] | None:
    """A duplex client's own first ``session.update``, which already opened the upstream
    session: applied locally, not resent (a native client's as vLLM-Omni reads it:
    ``shim/native_formats.py``; a GA client's also states what the upstream opened with).
    Returns what the client is told after ``session.created`` (a GA client's refused
    idle timeout, which the upstream opened without); None for a GA client's the proxy
    refuses (the upstream opened without it): it is then answered as a live update,
    its refusal told after ``session.created``."""
    if isinstance(shim, GaRelaySession):
        return ga_session_update.opened(shim, event)
    shim.apply_update(as_the_proxy_reads(event) if shim.config.native else event)
    return []


def take_opening(
    shim: EmulatedSession, opening: ClientFrame | None, duplex: bool, pending: list[ClientFrame]
) -> list[Action]:
    """The client's own first ``session.update``, which opened the upstream session
    (``opening``, among the ``pending`` frames), as the shim takes it: over a duplex
    upstream applied (``apply_opening``) and taken from ``pending``, unless refused
    (then refused as a live update is); returns what the client is told after
    ``session.created``."""
    if opening is not None and duplex:
        applied = apply_opening(shim, opening.event)
        if applied is not None:
            pending.remove(opening)
            return applied
    elif opening is not None and isinstance(shim, TurnBasedSession):
        # A native client's session.created holds its opening, as vLLM-Omni's does.
        held = shim.refusals.opening(opening.event)
        if held is not None:
            shim.apply_update(held)
    return []


def keep_opened_with(shim: EmulatedSession, opened_with: dict[str, Any] | None) -> None:
    """The session the upstream opened with, as sent (a native client's opening over
    the route's defaults, a GA client's as the upstream reads it, or either without
    the turn detection it refused): the prefix padding its detector runs with, if it
    has one, and for a native client what a fresh upstream is given after a loss or a
    move."""
    if not (isinstance(shim, BargeInRelaySession) and opened_with):
        return
    shim.upstream_timeline.opened(opened_with)
    if shim.native_client:
        shim.opened_with(opened_with)


def created_event(
    state: ProxyState,
    session_id: str,
    model: str,
    cls: Classification,
    shim: EmulatedSession,
    upstream_created: dict[str, Any],
    resume_token: str | None,
    resumed: bool = False,
) -> dict[str, Any]:
    """The client's ``session.created``: the shim's config with the proxy's capabilities
    (over the duplex upstream's own session, whose fields it keeps)."""
    caps = proxy_capabilities(
        cls,
        resume_available=resume_token is not None,
        barge_in_target_ms=state.config.vad.target_barge_in_latency_ms,
    )
    told = relayed(shim.kept_update()) if isinstance(shim, GaRelaySession) else None
    session = session_object(session_id, model, shim.config, told)
    if cls.kind == "duplex":
        upstream_session = upstream_created.get("session")
        if isinstance(upstream_session, dict):
            # The proxy's object over the upstream's: the upstream's was saved at the
            # opening, so after a resume or an update it is not the session as it is now.
            # A native client's (vLLM-Omni's shape) keeps the upstream's other keys
            # throughout, less its opening's runtime state, each of its spellings of a
            # rate, format or turn detection telling the current one
            # (shim/native_session_object.py); a GA client's is the proxy's GA object
            # alone (docs/protocol.md: only GA values), none of the upstream's keys.
            # At the opening a native client is told the upstream's own object (what the
            # upstream reads, e.g. a route's float input), which is the session as it is.
            if not shim.config.native:
                pass
            elif resumed:
                io = (shim.config.input_format, shim.config.output_format)
                if isinstance(shim, BargeInRelaySession):  # the upstream detects the turns
                    session["turn_detection"] = upstream_turn_detection(
                        shim.kept_update(), upstream_session, session["turn_detection"]
                    )
                session = resumed_over_upstream(upstream_session, session, io)
            else:
                own = {"id": session["id"], "model": session["model"]}
                session = {**session, **upstream_session, **own}
    session["capabilities"] = caps
    event: dict[str, Any] = {
        "type": "session.created",
        "event_id": f"event_{session_id[-12:]}created",
        "session": session,
    }
    if resume_token is not None:
        event["resume_token"] = resume_token
    return event
