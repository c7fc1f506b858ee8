"""What this replica has learned about each upstream server: its session limit, whether
it serves one session at a time, and whether it is holding upgrades while it warms up.

An upstream is a server, named by its host and port: vLLM-Omni counts every duplex
session of one server against one ``max_sessions`` (1 by default), whichever path or
route reached it, and a session in its disconnect grace keeps its slot. The limit is
learned from the server's own refusal, ``resource_exhausted`` with the message
``duplex_session_capacity_exhausted: limit=N``; whether it serves more than one
session, from ``supports_multi_session`` in a duplex ``session.created`` (false when
its ``max_sessions`` is 1). docs/protocol.md ("Capacity and warm-up") says how the
proxy uses both.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from shim.wire import error_code

EXHAUSTED = "resource_exhausted"
# A learned limit is forgotten after this long: a server restarted with more slots
# would otherwise never be asked again (the proxy refuses early at the old limit).
LEARNED_FOR_S = 300.0
_LIMIT = re.compile(r"limit\s*=\s*(\d+)")


def upstream_key(url: str) -> str:
    """The server a URL reaches: ``host:port`` (every path on it shares its sessions)."""
    parts = urlsplit(url)
    secure = parts.scheme in ("wss", "https")
    port = parts.port or (443 if secure else 80)
    return f"{(parts.hostname or '').lower()}:{port}"


def exhausted(event: dict[str, Any]) -> bool:
    """Whether an upstream's answer is its capacity refusal."""
    return event.get("type") == "error" and error_code(event) == EXHAUSTED


def refused_limit(event: dict[str, Any]) -> int | None:
    """The ``limit=N`` a capacity refusal names, if it names one."""
    err = event.get("error")
    message = err.get("message") if isinstance(err, dict) else err
    found = _LIMIT.search(message) if isinstance(message, str) else None
    return int(found.group(1)) if found and int(found.group(1)) > 0 else None


@dataclass
class UpstreamFacts:
    # The server's own max_sessions, from its resource_exhausted refusal, and when.
    learned: int | None = None
    learned_at: float = 0.0
    # A duplex session.created said supports_multi_session false (or said nothing):
    # the server takes one session at a time. None: not known (no session yet, or
    # the server is turn-based).
    single: bool | None = None
    # Dials whose upgrade the server is holding now (it is warming up).
    held: int = 0

    @property
    def limit(self) -> int | None:
        """The server's own limit, while it is recent."""
        if self.learned is None or time.monotonic() - self.learned_at > LEARNED_FOR_S:
            return None
        return self.learned


class UpstreamBook:
    """Facts per upstream server, learned from the sessions this replica opens."""

    def __init__(self) -> None:
        self._facts: dict[str, UpstreamFacts] = {}

    def facts(self, key: str) -> UpstreamFacts:
        return self._facts.setdefault(key, UpstreamFacts())

    def learn_created(self, key: str, created: dict[str, Any], kind: str) -> None:
        """Read a ``session.created``: a duplex one says whether more than one fits."""
        facts = self.facts(key)
        if kind != "duplex":
            facts.single = None
            return
        session = created.get("session")
        caps = session.get("capabilities") if isinstance(session, dict) else None
        multi = caps.get("supports_multi_session") if isinstance(caps, dict) else None
        facts.single = multi is not True
        if multi is True and facts.learned == 1:
            facts.learned = None  # it says it takes more now (restarted, reconfigured)

    def learn_limit(self, key: str, limit: int) -> bool:
        """The server said its limit; True when that is news."""
        facts = self.facts(key)
        news = facts.limit != limit
        facts.learned, facts.learned_at = limit, time.monotonic()
        return news

    def warming(self, key: str) -> bool:
        """A dial is held at the upgrade right now: the server is warming up."""
        facts = self._facts.get(key)
        return facts is not None and facts.held > 0
