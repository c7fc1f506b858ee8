"""The ``[store]`` section: where sessions are kept, for how long, and the key that seals
upstream resume tokens in it (``proxy/store/secret_box.py``)."""

from __future__ import annotations

import base64

from pydantic import Field, field_validator, model_validator
from pydantic.dataclasses import dataclass

from proxy.config_ops import SECTION
from proxy.config_store_url import parse_store_url

SECRET_KEY_BYTES = 32


def decode_key(text: str) -> bytes:
    """A store secret key: base64 (standard or URL-safe) of exactly 32 bytes."""
    try:
        key = base64.b64decode(text.strip().replace("-", "+").replace("_", "/"), validate=True)
    except ValueError:  # binascii.Error is one
        raise ValueError("store secret key must be base64") from None
    if len(key) != SECRET_KEY_BYTES:
        raise ValueError(f"store secret key must be {SECRET_KEY_BYTES} bytes, got {len(key)}")
    return key


@dataclass(frozen=True, slots=True, config=SECTION)
class StoreConfig:
    url: str = Field(
        default="memory://",
        description=(
            "memory:// (one replica); shared: redis://, rediss:// (TLS), unix://, "
            "redis+cluster://h:p,h:p, redis+sentinel://h:p,h:p/service/db."
        ),
    )
    cluster: bool = Field(
        default=False, description="The redis:// or rediss:// url names a Redis Cluster node."
    )
    password_file: str = Field(
        default="",
        description="File holding the Redis password (a mounted Secret); never logged.",
    )
    tls_ca_file: str = Field(
        default="", description="CA bundle that signed Redis's certificate (rediss only)."
    )
    tls_cert_file: str = Field(
        default="", description="Client certificate for mutual TLS (rediss only)."
    )
    tls_key_file: str = Field(default="", description="Private key of tls_cert_file (rediss only).")
    disconnect_grace_s: float = Field(
        default=30.0, gt=0, description="How long a dropped session waits to be resumed."
    )
    checkpoint_interval_s: float = Field(
        default=0.25,
        gt=0,
        le=2.0,
        description="Fewest seconds between two checkpoints of a busy session (its changes "
        "are coalesced), unless its lease is due (three times in disconnect_grace_s); a "
        "client that leaves is checkpointed at once.",
    )
    replay_max_bytes: int = Field(
        default=8 * 1024 * 1024,
        gt=0,
        description="Server events kept per session for replay, in bytes (each event's "
        "UTF-8 plus a fixed cost an entry, counted alike by the session and the store).",
    )
    replay_max_age_s: float = Field(
        default=60.0, gt=0, description="Server events older than this are not replayed."
    )
    timeout_s: float = Field(
        default=0.25, gt=0, description="No request ever blocks on the store longer than this."
    )
    held_max_frames: int = Field(
        default=1024,
        gt=0,
        description="Events a client is owed behind a response end not yet saved, at most; "
        "past this (or held_max_bytes) the end and what follows go out unsaved, logged and counted "
        "(over_cap in duplex_proxy_response_ends_unsaved_total); at most half of "
        "server.client_send_queue_frames, which takes them all at once.",
    )
    held_max_bytes: int = Field(
        default=4 * 1024 * 1024,
        gt=0,
        description="Bytes of those held events, at most (see held_max_frames); at most "
        "half of server.client_send_queue_bytes.",
    )
    recent_event_ids: int = Field(
        default=256, ge=0, description="Client event_ids remembered per session to drop re-sends."
    )
    secret_key: str = Field(
        default="",
        description="Base64 of 32 random bytes: encrypts upstream resume tokens in the store "
        "(AES-256-GCM). Empty: none are stored; a moved session opens a fresh upstream session.",
    )
    previous_secret_keys: tuple[str, ...] = Field(
        default=(),
        description="Retired secret keys, still read during a key rotation (never written).",
    )

    @field_validator("url")
    @classmethod
    def _valid_url(cls, url: str) -> str:
        # The messages never quote the password (parse_store_url redacts the url).
        parse_store_url(url)
        return url

    @field_validator("secret_key")
    @classmethod
    def _key_decodes(cls, key: str) -> str:
        if key:
            decode_key(key)
        return key

    @field_validator("previous_secret_keys")
    @classmethod
    def _keys_decode(cls, keys: tuple[str, ...]) -> tuple[str, ...]:
        for key in keys:
            decode_key(key)
        return keys

    @model_validator(mode="after")
    def _consistent(self) -> StoreConfig:
        parsed = parse_store_url(self.url, self.cluster)
        if self.password_file and parsed.password is not None:
            raise ValueError("a password in store.url and store.password_file: give one")
        if parsed.kind == "memory" and self.password_file:
            raise ValueError("store.password_file needs a Redis url, not memory://")
        tls_files = (self.tls_ca_file, self.tls_cert_file, self.tls_key_file)
        if any(tls_files) and not parsed.tls:
            raise ValueError("store.tls_* files need a TLS url (rediss://, rediss+cluster://...)")
        if bool(self.tls_cert_file) != bool(self.tls_key_file):
            raise ValueError("store.tls_cert_file and store.tls_key_file go together")
        return self
