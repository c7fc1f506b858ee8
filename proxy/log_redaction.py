"""Keys, tokens and audio never reach a log line: a structlog processor that redacts them.

Fields named like a secret (``authorization``, ``api_key``, ``resume_token``,
``token``, ``key``) or like audio (``audio``, ``delta``) are replaced wherever they
sit in an event, nested dicts and lists included; in free text (an error message, a
raw frame) a bearer credential, a key subprotocol or such a JSON field is cut out.
"""

from __future__ import annotations

import logging
import re
from collections.abc import MutableMapping
from typing import Any

REDACTED = "[redacted]"
SECRET_FIELDS = frozenset(
    {
        "authorization",
        "api_key",
        "resume_token",
        "token",
        "key",
        "audio",
        "delta",
        "password",
        "secret",
        "sec-websocket-protocol",
    }
)
_FIELD_NAMES = "|".join(sorted(re.escape(f) for f in SECRET_FIELDS))
_INLINE = (
    # A bearer credential, or a key offered as a WebSocket subprotocol.
    (re.compile(r"(?i)\b(bearer\s+|openai-insecure-api-key\.)[^\s\"',;&]+"), r"\1" + REDACTED),
    # A secret field inside JSON text: "resume_token": "..."
    (
        re.compile(r"(?i)(\"(?:" + _FIELD_NAMES + r")\"\s*:\s*)\"(?:[^\"\\]|\\.)*\""),
        r'\1"' + REDACTED + '"',
    ),
    # ...or in a query string: resume_token=...
    (re.compile(r"(?i)\b((?:" + _FIELD_NAMES + r")=)[^\s&\"']+"), r"\1" + REDACTED),
)
_MAX_DEPTH = 8


def redact(value: Any, depth: int = 0) -> Any:
    """``value`` with every secret field and inline secret replaced."""
    if depth > _MAX_DEPTH:
        return value
    if isinstance(value, str):
        for pattern, replacement in _INLINE:
            value = pattern.sub(replacement, value)
        return value
    if isinstance(value, dict):
        return {
            k: REDACTED if str(k).lower() in SECRET_FIELDS else redact(v, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return type(value)(redact(v, depth + 1) for v in value)
    return value


class RedactingFilter(logging.Filter):
    """The same for standard-library records (aiohttp's own warnings, for one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


def redact_secrets(
    logger: Any, method_name: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """The structlog processor (runs last before rendering, after exceptions are text)."""
    for name, value in list(event_dict.items()):
        event_dict[name] = REDACTED if name.lower() in SECRET_FIELDS else redact(value)
    return event_dict
