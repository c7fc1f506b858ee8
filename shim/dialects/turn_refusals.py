"""``duplex_emulated``'s refusals of a ``response.create`` or ``response.cancel``, in
the client's own protocol.

The proxy answers for a turn-based upstream, so it refuses as the server the
client speaks to would: GA's codes to a GA client, and to a native client
(``?duplex=1``, ``/v1/duplex``) vLLM-Omni's codes and words, from its
``engine/duplex/session/runner.py`` (``_on_cancel``, ``_start_response_from_committed_audio``)
and ``engine/duplex/realtime_events.py`` (``resolve_cancel_response``). vLLM-Omni
names the client's event in a cancel's refusal only, and says nothing to a cancel
naming a response it does not know while none is in progress.
"""

from __future__ import annotations

from typing import Any

from shim import native_formats, native_turns
from shim.dialects import turn_limits
from shim.dialects.ga_events import NO_ACTIVE_RESPONSE, not_the_active
from shim.dialects.relay_wire import ga_g711_refusal
from shim.output import ActiveResponse
from shim.session_config import ClientSessionConfig, SessionConfigError
from shim.session_options import check_max_output_tokens

# An error to send: (code, message, the client's event it names or None, param).
Refused = tuple[str, str, dict[str, Any] | None, str | None]

# Why a request is refused -> GA's code and words.
_GA = {
    "busy": ("conversation_already_has_active_response", "a response is in progress"),
    "no_input": (
        "response_create_without_input",
        "no committed user audio is waiting for a response",
    ),
    "no_response": ("response_cancel_not_active", NO_ACTIVE_RESPONSE),
}


class Refusals:
    def __init__(self, native_client: bool) -> None:
        self.native = native_client

    def session_update(self, ev: dict[str, Any]) -> Refused | None:
        """A ``session.update`` refused before the proxy reads it: a native client's GA
        G.711 names, which vLLM-Omni does not know (in its words), a format it takes
        but the proxy cannot serve (in the proxy's), or turn detection it cannot run;
        a GA client's ``max_output_tokens`` outside GA's bounds."""
        if not self.native:
            # A GA client's limit outside GA's bounds is invalid before it is
            # unsupported here (``shim/session_options.py``).
            session = ev.get("session")
            try:
                check_max_output_tokens(session if isinstance(session, dict) else {})
            except SessionConfigError as bad:
                return (bad.code, str(bad), ev, bad.param)
            return None
        g711 = ga_g711_refusal(ev)
        if g711 is not None:
            return ("unsupported_audio_format", g711, ev, None)
        cannot = native_formats.proxy_refusal(ev)
        if cannot is not None:
            return (native_formats.PROXY_CANNOT_SERVE, cannot[0], ev, cannot[1])
        turns = native_turns.turn_refusal(ev)  # what vLLM-Omni cannot run, in its words
        return (native_turns.CODE, turns, ev, "turn_detection") if turns is not None else None

    def as_read(self, ev: dict[str, Any]) -> dict[str, Any]:
        """A native client's update read as vLLM-Omni reads it (``shim/native_formats.py``)."""
        return native_formats.as_the_proxy_reads(ev) if self.native else ev

    def opening(self, ev: dict[str, Any]) -> dict[str, Any] | None:
        """The part of a native client's opening ``session.update`` its ``session.created``
        holds already, as vLLM-Omni's does (the update itself is answered after it, with
        ``session.updated`` and any refusal); None where there is none."""
        if not self.native or self.session_update(ev) is not None:
            return None
        return self.as_read(turn_limits.strip_session_fields(ev)[0])

    def create(self, busy: bool) -> tuple[str, str, bool]:
        """A ``response.create`` refused while a response is in progress (``busy``) or
        with no committed turn to answer: (code, message, names the client's event)."""
        if not self.native:
            return (*_GA["busy" if busy else "no_input"], True)
        if busy:
            return (
                "response_already_active",
                "response.create cannot start while another response is active.",
                False,
            )
        return (
            "response_create_without_input",
            "Duplex response.create requires committed audio to answer.",
            False,
        )

    def cancel(self, rid: Any, active: str | None, last: str | None) -> tuple[str, str] | None:
        """A ``response.cancel`` of ``rid`` (None: the client named none) that cannot
        be served, given the response in progress (``active``) and the latest one
        (``last``): (code, message), or None to answer nothing."""
        named = rid if isinstance(rid, str) and rid else None
        if active is not None and (named is None or named == active):
            return None  # served: it cancels the response in progress
        if not self.native:
            if active is not None:
                return "response_cancel_not_active", not_the_active(named)
            return _GA["no_response"]
        if active is not None:
            return "response_not_active", f"Response is not active: {named}"
        done = named or last
        if done is not None and done == last:
            return "response_not_active", f"Response is already complete: {done}"
        if named is not None:
            return None  # vLLM-Omni leaves a response it does not know unanswered
        return "response_not_active", "response.cancel requires an active response"

    def response_create(
        self, ev: dict[str, Any], cfg: ClientSessionConfig, busy: bool, waiting: bool
    ) -> tuple[Refused | None, dict[str, str] | None]:
        """Why a ``response.create`` starts nothing (an option the dialect cannot honour,
        an answer in progress, no committed turn waiting), or None; and the metadata it
        names, told back with its response."""
        no, metadata = turn_limits.create_refusal(ev, cfg)
        if no is not None:
            return (no[0], no[1], ev, no[2]), None
        if busy or not waiting:
            code, message, names_event = self.create(busy)
            return (code, message, ev if names_event else None, None), None
        return None, metadata

    def response_cancel(
        self, resp: ActiveResponse | None, ev: dict[str, Any]
    ) -> tuple[Refused | None, bool]:
        """Why a ``response.cancel`` cancels nothing, or None; and whether it cancels the
        response in progress (vLLM-Omni answers nothing to some it cannot serve)."""
        active = resp.response_id if resp is not None and resp.live else None
        last = resp.response_id if resp is not None else None
        refused = self.cancel(ev.get("response_id"), active, last)
        if refused is not None:
            return (*refused, ev, None), False
        return None, active is not None
