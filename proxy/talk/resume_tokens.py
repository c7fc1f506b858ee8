"""The resume token a client holds, and what it does with a refused resume.

As docs/protocol.md ("Resume") tells clients, two refusals are worth trying again, on a
new connection after a pause: ``session_resume_unavailable`` (the session store did not
answer) and ``upstream_unavailable`` (the session's upstream could not be reached or did
not answer the resume; the session stays where it was). If the first carries a
``resume_token``, the store holds either that one or the client's own, so that one is
tried first and the client's own next, should it be denied. Any other refusal means the
session is gone. A bounded number of refusals in a row, then it is taken as gone too.
"""

from __future__ import annotations

MAX_REFUSALS = 5  # in a row, before the session is taken as gone
FIRST_BACKOFF_S = 0.25
MAX_BACKOFF_S = 4.0
# Refusals that leave the session where it was: tried again.
RETRIED = frozenset({"session_resume_unavailable", "upstream_unavailable"})
# A token refused: the proxy's word to a GA client, vLLM-Omni's to a native one.
DENIED = frozenset({"session_resume_denied", "invalid_resume_token"})


class ResumeTokens:
    __slots__ = ("other", "refusals", "token")

    def __init__(self, token: str | None = None) -> None:
        self.token = token  # what the next resume sends
        self.other: str | None = None  # the one to try if ``token`` is denied
        self.refusals = 0

    def given(self, token: object) -> None:
        """A session created or resumed: its (new) token, if it came with one."""
        if isinstance(token, str) and token:
            self.token = token
        self.other, self.refusals = None, 0

    def refused(self, code: str, token: object = None) -> bool:
        """A resume refused with ``code`` (and the refusal's ``resume_token``): whether to
        try again, with ``self.token``, after ``backoff_s()``."""
        self.refusals += 1
        if self.refusals > MAX_REFUSALS:
            return False
        if code in RETRIED:
            if isinstance(token, str) and token and token != self.token:
                self.other, self.token = self.token, token
            return True
        if code in DENIED and self.other is not None:
            self.token, self.other = self.other, None
            return True
        return False

    def backoff_s(self) -> float:
        """The pause before the next try: doubling from the first, up to the most."""
        return float(min(FIRST_BACKOFF_S * 2 ** max(0, self.refusals - 1), MAX_BACKOFF_S))
