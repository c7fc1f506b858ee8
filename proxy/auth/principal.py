"""``Principal``: who a connection authenticated as, and what that allows."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Principal:
    """An API key (``id`` = the key's configured id) or a token subject (``jwt:SUB``).

    Only the id is ever logged or stored (in a session record, to bind resume to it);
    never the key or token it was proven with.
    """

    id: str
    # Model names or globs this principal may open.
    routes: tuple[str, ...] = ("*",)
    max_sessions: int | None = None
    sessions_per_minute: int | None = None

    def allows(self, model: str, route_pattern: str) -> bool:
        """Whether it may open ``model`` (served by the route named ``route_pattern``)."""
        return any(g == route_pattern or fnmatch.fnmatchcase(model, g) for g in self.routes)


# Auth mode "none": every connection is the same unnamed principal, allowed everything.
ANONYMOUS = Principal("")
