"""The ``[redial]`` section: how an emulated session replaces a lost upstream.

Apart from ``proxy/config_model.py`` because it is one policy with its own numbers:
how often and how long to try, and how much of what the client says meanwhile is
held for the new upstream session (``proxy/emulated/upstream_redial.py``).
"""

from __future__ import annotations

from pydantic import Field
from pydantic.dataclasses import dataclass

from proxy.config_ops import SECTION


@dataclass(frozen=True, slots=True, config=SECTION)
class RedialConfig:
    """An emulated session's upstream lost or aborted: a new one, off the session loop."""

    # An upstream restart refuses connections for a second or two: a single attempt
    # would end every session of the route on each restart.
    attempts: int = Field(
        default=8, gt=0, description="Tries to reach the upstream again before giving up."
    )
    budget_s: float = Field(
        default=20.0,
        gt=0,
        description="All the tries together stop after this long; the session then ends"
        " with upstream_unavailable (1011).",
    )
    backoff_s: float = Field(
        default=0.25,
        gt=0,
        description="Wait after the first failed try; doubled after each, up to 2 s.",
    )
    buffer_bytes: int = Field(
        default=1 << 20,
        gt=0,
        description="What the session sends upstream while it redials is held up to this"
        " many bytes; past them it is dropped and the client gets upstream_reconnecting.",
    )
