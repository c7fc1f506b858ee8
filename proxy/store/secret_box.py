"""Encrypt the secrets a stored session carries (the upstream's resume token).

Anyone who can read the store must not be able to take an upstream session over,
so such a secret is stored only sealed with AES-256-GCM under ``store.secret_key``.
A sealed value reads ``dxs1.<key id>.<base64url(nonce | ciphertext | tag)>``: the
key id (the first 8 hex digits of the key's SHA-256) names the key that sealed it,
so keys rotate: put the new key in ``store.secret_key`` and the old one in
``store.previous_secret_keys`` until every session sealed under it has ended. The
session id is the associated data: a sealed token copied into another session's
record does not open. Without a key nothing is sealed: the caller stores no secret.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from collections.abc import Iterable
from functools import lru_cache

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from proxy.config import StoreConfig
from proxy.config_store import decode_key

PREFIX = "dxs1"
NONCE_BYTES = 12


def key_id(key: bytes) -> str:
    return hashlib.sha256(key).hexdigest()[:8]


class SecretBox:
    """Seals with the current key; opens with the current or a previous one."""

    def __init__(self, current: bytes | None, previous: Iterable[bytes] = ()) -> None:
        self._current = (key_id(current), AESGCM(current)) if current is not None else None
        self._keys = {key_id(k): AESGCM(k) for k in previous}
        if self._current is not None:
            self._keys[self._current[0]] = self._current[1]

    @property
    def enabled(self) -> bool:
        return self._current is not None

    def seal(self, plaintext: str, context: str) -> str | None:
        """``plaintext`` sealed for the session ``context``; None without a key."""
        if self._current is None:
            return None
        kid, aead = self._current
        nonce = os.urandom(NONCE_BYTES)
        sealed = nonce + aead.encrypt(nonce, plaintext.encode(), context.encode())
        return f"{PREFIX}.{kid}.{base64.urlsafe_b64encode(sealed).decode()}"

    def open(self, sealed: str, context: str) -> str | None:
        """The plaintext, or None: not sealed here, unknown key, or tampered with."""
        parts = sealed.split(".")
        if len(parts) != 3 or parts[0] != PREFIX or parts[1] not in self._keys:
            return None
        try:
            raw = base64.urlsafe_b64decode(parts[2])
            plain = self._keys[parts[1]].decrypt(
                raw[:NONCE_BYTES], raw[NONCE_BYTES:], context.encode()
            )
        except (binascii.Error, ValueError, InvalidTag):
            return None
        return plain.decode()


def secret_box(config: StoreConfig) -> SecretBox:
    """The box for a store config's keys (validated config: the keys decode)."""
    return _box(config.secret_key, tuple(config.previous_secret_keys))


@lru_cache(maxsize=8)
def _box(secret_key: str, previous_keys: tuple[str, ...]) -> SecretBox:
    current = decode_key(secret_key) if secret_key else None
    return SecretBox(current, [decode_key(k) for k in previous_keys])
