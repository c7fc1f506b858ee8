"""What the stand-in model needs from its session, and the user turn it hands on.

Kept narrow so the model never touches a socket: it emits events and reads a
few settings through :class:`SessionPort`.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from proxy.reference.options import ReferenceOptions

if TYPE_CHECKING:
    from proxy.reference.duplex_config import SessionSettings


class SessionPort(Protocol):
    id: str
    kind: str
    options: ReferenceOptions
    reply_ms: int
    settings: SessionSettings

    @property
    def modalities(self) -> list[object]: ...

    @property
    def overlap_policy(self) -> str: ...

    @property
    def server_vad(self) -> bool: ...

    @property
    def vad_create_response(self) -> bool: ...

    @property
    def auto_response(self) -> bool: ...

    @property
    def overlap_short_ack_ms(self) -> int: ...

    def emit(self, event_type: str, fields: dict[str, object]) -> None: ...

    def emit_error(
        self, code: str, message: str, *, event_id: object = None, param: str | None = None
    ) -> None: ...

    def audio_turn(self) -> Awaitable[float]: ...


@dataclass(frozen=True, slots=True)
class UserTurn:
    item_id: str
    audio: npt.NDArray[np.int16]
    speech_ms: int


def new_item_id() -> str:
    return f"item_{uuid.uuid4().hex}"


def rms(samples: npt.NDArray[np.float32]) -> float:
    return float(np.sqrt(np.mean(np.square(samples, dtype=np.float64)))) if samples.size else 0.0


def emit_overlap_decision(
    port: SessionPort,
    epoch: int,
    action: str,
    reason: str,
    *,
    duration_ms: int,
    overlap_ms: int,
    cancel_reason: str = "",
) -> None:
    """``overlap.decision`` (non-GA): what the model did with speech over its own answer."""
    policy = port.overlap_policy
    details: dict[str, object] = {
        "type": "overlap.decision",
        "session_id": port.id,
        "epoch": epoch,
        "policy": policy,
        "action": action,
        "reason": reason,
    }
    if cancel_reason:
        details["cancel_reason"] = cancel_reason
    details.update(
        duration_ms=duration_ms, overlap_speech_ms=overlap_ms, buffer_audio=action != "drop"
    )
    port.emit(
        "overlap.decision",
        {
            "session_id": port.id,
            "epoch": epoch,
            "policy": policy,
            "action": action,
            "reason": reason,
            "metadata": details,
        },
    )
