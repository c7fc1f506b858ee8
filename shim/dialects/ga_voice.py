"""A GA client's ``voice`` over a duplex upstream (``ga_session_update.py``).

vLLM-Omni 0.30.0 refuses a ``session.update`` naming any ``voice`` once its session has
output audio, the same voice included, and applies none of that update
(``engine/duplex/config.py``, ``apply_realtime_update``: ``voice_update_after_audio_
unsupported``; ``engine/duplex/session/control.py`` drops the whole candidate config).
GA clients restate theirs in every update (the Agents SDK on each handoff or settings
change), so the upstream is told a voice only when it changes. A real change while the
upstream would refuse it (its current response's playback has audio:
``relay_context_lock.py``) is refused to the client, and the rest of the update
applies; after a cut, from a new response until its first audio, and on a fresh
upstream session, it goes up.
"""

from __future__ import annotations

from typing import Any

UNSTATED = object()
CODE = "voice_update_after_audio_unsupported"
PARAM = "session.audio.output.voice"
MESSAGE = (
    "session.update cannot change the voice once the model has answered with audio;"
    " the rest of the update was applied"
)


def _output(session: Any) -> dict[str, Any] | None:
    audio = session.get("audio") if isinstance(session, dict) else None
    output = audio.get("output") if isinstance(audio, dict) else None
    return output if isinstance(output, dict) else None


def of(session: Any) -> Any:
    """The voice a session object names (GA's ``audio.output.voice``, else flat)."""
    output = _output(session)
    if output is not None and "voice" in output:
        return output["voice"]
    if isinstance(session, dict) and "voice" in session:
        return session["voice"]
    return UNSTATED


def without(session: dict[str, Any]) -> dict[str, Any]:
    """``session`` naming no voice (the objects on its path copied, not changed)."""
    out = {k: v for k, v in session.items() if k != "voice"}
    output = _output(out)
    if output is not None and "voice" in output:
        out["audio"] = {
            **out["audio"],
            "output": {k: v for k, v in output.items() if k != "voice"},
        }
    return out
