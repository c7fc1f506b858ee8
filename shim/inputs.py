"""Typed inputs to the shim. Time always arrives as ``now_ms``, from the edge."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ClientEvent:
    event: dict[str, Any]
    raw: str
    now_ms: float


@dataclass(frozen=True, slots=True)
class UpstreamEvent:
    event: dict[str, Any]
    raw: str
    now_ms: float


@dataclass(frozen=True, slots=True)
class VadWindow:
    """Speech probability of one 512-sample window ending at ``end_sample`` (16 kHz)."""

    prob: float
    end_sample: int
    now_ms: float


@dataclass(frozen=True, slots=True)
class Tick:
    """Time passes; lets the shim notice that estimated playback has ended."""

    now_ms: float


@dataclass(frozen=True, slots=True)
class UpstreamLost:
    """The upstream socket closed without the shim asking for it."""

    reason: str
    now_ms: float


@dataclass(frozen=True, slots=True)
class UpstreamReattached:
    """A fresh upstream session replaced an aborted or lost one."""

    now_ms: float


Input = ClientEvent | UpstreamEvent | VadWindow | Tick | UpstreamLost | UpstreamReattached
