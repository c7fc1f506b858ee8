"""The upstream's resume token in a stored snapshot: sealed, or not stored at all.

With ``store.secret_key`` the token is stored sealed (``proxy.store.secret_box``);
without, it is left out, and a session taken over from the store opens a fresh
upstream session instead of resuming the upstream's own.
"""

from __future__ import annotations

from typing import Any

from proxy.persist.checkpoint import checkpoint_of
from proxy.store.base import SessionRecord
from proxy.store.secret_box import SecretBox
from shim.snapshot import upstream_binding, upstream_token, with_upstream_token


class TokenSealer:
    """Seals one session's upstream token, once per token: a sealed value is random,
    and sealing the same token at every checkpoint would make each look changed."""

    def __init__(self, box: SecretBox, session_id: str) -> None:
        self.box, self.session_id = box, session_id
        self._plain: str | None = None
        self._sealed: str | None = None

    @property
    def sealed(self) -> bool:
        """Whether the last token sealed is in the store: a new owner can resume it."""
        return self._sealed is not None

    def seal(self, shim: dict[str, Any]) -> dict[str, Any]:
        """``shim`` as the store may keep it."""
        token = upstream_token(shim)
        if token is None:
            return shim
        if token != self._plain:
            self._plain, self._sealed = token, self.box.seal(token, self.session_id)
        return with_upstream_token(shim, self._sealed)


def opened(shim: dict[str, Any], box: SecretBox, session_id: str) -> dict[str, Any]:
    """A stored snapshot with its upstream token opened (None where it cannot be)."""
    token = upstream_token(shim)
    if token is None:
        return shim
    return with_upstream_token(shim, box.open(token, session_id))


def stored_binding(record: SessionRecord, box: SecretBox) -> tuple[str, str, int] | None:
    """(id, resume token, seq) of the upstream session a stored record can resume."""
    return upstream_binding(opened(checkpoint_of(record).shim, box, record.session_id))
