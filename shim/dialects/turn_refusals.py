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

# Why a request is refused -> GA's code and words.
_GA = {
    "busy": ("conversation_already_has_active_response", "a response is in progress"),
    "no_input": (
        "response_create_without_input",
        "no committed user audio is waiting for a response",
    ),
    "no_response": ("response_cancel_not_active", "there is no active response to cancel"),
}


class Refusals:
    def __init__(self, native_client: bool) -> None:
        self.native = native_client

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
                return "response_cancel_not_active", f"response {named!r} is not active"
            return _GA["no_response"]
        if active is not None:
            return "response_not_active", f"Response is not active: {named}"
        done = named or last
        if done is not None and done == last:
            return "response_not_active", f"Response is already complete: {done}"
        if named is not None:
            return None  # vLLM-Omni leaves a response it does not know unanswered
        return "response_not_active", "response.cancel requires an active response"
