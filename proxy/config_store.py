"""The ``[store]`` section: where sessions are kept, for how long, and the key that seals
upstream resume tokens in it (``proxy/store/secret_box.py``)."""

from __future__ import annotations

import base64

from pydantic import Field, field_validator, model_validator
from pydantic.dataclasses import dataclass

from proxy.config_ops import SECTION
from proxy.config_store_url import parse_store_url

SECRET_KEY_BYTES = 32
# After a store write that failed, the persister tries again this long later, or a
# lease interval if shorter (``proxy/persist/lease_pace.py``): not at every interval
# while the store is down (a checkpoint after a long outage carries every event
# since, and serialising it for a store that refuses it only costs CPU).
STORE_RETRY_S = 0.5


def min_grace_s(timeout_s: float) -> float:
    """The shortest ``disconnect_grace_s`` whose keys outlive one store write that
    timed out. The lease is written every grace/3 at least; a write that times out
    (``timeout_s``) is retried min(``STORE_RETRY_S``, grace/3) later and may take
    ``timeout_s`` too: grace/3 + 2 * timeout_s + min(STORE_RETRY_S, grace/3) <= grace."""
    shortest = (
        6 * timeout_s if 2 * timeout_s <= STORE_RETRY_S else 1.5 * (2 * timeout_s + STORE_RETRY_S)
    )
    return round(shortest, 6)  # 6 * 0.1 is 0.6, not 0.6000000000000001


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
        default=30.0,
        gt=0,
        description="How long a dropped session waits to be resumed (one whose client "
        "hung up, with a close frame, waits as long but gives its slot to a new session "
        "that needs it). With Redis, long "
        "enough for one timed-out write and its retry: at least 6 * timeout_s, or "
        "3 * timeout_s + 0.75 s past a timeout_s of 0.25 s (1.5 s with the default).",
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
    rebind_wait_s: float = Field(
        default=1.0,
        ge=0,
        description="How long a passthrough resume waits, retrying, for the hash of the "
        "upstream's rotated resume token to be written before it answers the client; past "
        "it the client is answered and the write retried until it lands, while the "
        "resumed connection lasts and disconnect_grace_s after it ends.",
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
        shortest = min_grace_s(self.timeout_s)
        if parsed.kind != "memory" and self.disconnect_grace_s < shortest:
            raise ValueError(
                f"store.disconnect_grace_s {self.disconnect_grace_s:g} s is too short for "
                f"store.timeout_s {self.timeout_s:g} s: one timed-out write and its retry "
                f"would let a live session's keys expire; give at least {shortest:g} s, or "
                "a shorter timeout_s"
            )
        return self
