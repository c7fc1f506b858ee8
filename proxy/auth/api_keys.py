"""API keys: stored only as SHA-256 digests, matched in constant time."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable

from proxy.auth.principal import Principal
from proxy.config import ApiKey


def hash_key(key: str) -> str:
    """The digest a config holds for ``key`` (``duplex-proxy hash-key``)."""
    return hashlib.sha256(key.encode()).hexdigest()


def new_key() -> str:
    """A fresh random key (256 bits), for operators who have none yet."""
    return "dpk_" + secrets.token_urlsafe(32)


def digest_matches(presented: str, digest: str) -> bool:
    return hmac.compare_digest(hash_key(presented), digest)


class KeyRing:
    """The configured keys; ``find`` checks a presented key against every one of them."""

    def __init__(self, keys: Iterable[ApiKey]) -> None:
        self._keys = tuple(keys)

    def find(self, presented: str) -> Principal | None:
        digest = hash_key(presented)
        found: ApiKey | None = None
        # Every digest is compared (no early exit), each in constant time.
        for key in self._keys:
            if hmac.compare_digest(digest, key.sha256):
                found = key
        if found is None:
            return None
        return Principal(
            id=found.id,
            routes=found.routes,
            max_sessions=found.max_sessions,
            sessions_per_minute=found.sessions_per_minute,
        )
