"""What a ``talk`` run is given: its options and its input source."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


class Source(Protocol):
    """Where the input comes from: 20 ms PCM16 frames at real-time pace."""

    @property
    def ended(self) -> bool: ...

    async def next_frame(self) -> bytes: ...

    def close(self) -> None: ...


@dataclass
class TalkOptions:
    url: str
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    out: Path | None = None
    drop_at_s: float | None = None
    tail_s: float = 2.0
    max_s: float = 120.0
    verbose: bool = False
