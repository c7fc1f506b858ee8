"""A GA client's ``instructions`` over a duplex upstream (``ga_session_update.py``).

vLLM-Omni 0.30.0 fixes a session's instructions at the first append of input its model
accepts (``engine/duplex/session/append_task.py``: ``context_locked``) and from then on
refuses, whole, a ``session.update`` whose instructions differ from the session's
(``engine/duplex/session/control.py``, ``on_session_update``:
``instructions_update_unsupported``); the same instructions restated are no change. A
GA client changes them after the user has spoken (the Agents SDK on a handoff), so the
proxy refuses that change to the client itself, with a GA ``error`` naming the field,
and the rest of the update goes upstream and applies. The client is told ``""`` for
none (``shim/session_config.py``, ``session_object``): restated, ``""`` and null are
the same instructions to it, so the one the upstream does not have is dropped silently.

The session counts as locked once its model has taken input, as vLLM-Omni's runner
hands it input: when it takes a turn, or, auto-responding, a whole chunk of audio
(``relay_context_lock.py``); audio only buffered leaves the instructions free.
"""

from __future__ import annotations

from typing import Any

UNSTATED = object()
CODE = "instructions_update_unsupported"
PARAM = "session.instructions"
MESSAGE = (
    "session.update cannot change the instructions once the session has heard audio"
    " (the upstream model fixes them then); the rest of the update was applied"
)


def of(session: Any) -> Any:
    """The instructions a session object sets (a string, or null for none) as vLLM-Omni
    reads them (``engine/duplex/config.py``); UNSTATED when it sets none."""
    if not isinstance(session, dict) or "instructions" not in session:
        return UNSTATED
    value = session["instructions"]
    return value if value is None or isinstance(value, str) else UNSTATED


def without(session: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in session.items() if k != "instructions"}


def screened(kept: dict[str, Any] | None, session: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """``session`` as a locked upstream takes it, and whether a change was refused.
    ``kept``: the upstream's session as stated (its instructions: none, null)."""
    wanted = of(session)
    if wanted is UNSTATED:
        return session, False
    has = of(kept)
    has = None if has is UNSTATED else has
    if wanted == has:
        return session, False  # the same restated: no change to vLLM-Omni
    return without(session), (wanted or None) != (has or None)
