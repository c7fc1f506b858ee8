"""structlog JSON logs; every session's logger is bound to its ``session_id``."""

from __future__ import annotations

import logging
import sys

import structlog

from proxy.log_redaction import RedactingFilter, redact_secrets

Logger = structlog.stdlib.BoundLogger

_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "critical": 50}


def configure_logging(level: str = "info") -> None:
    """One JSON object per line on stderr, ISO timestamps, bound context merged in."""
    numeric = _LEVELS.get(level.lower(), logging.INFO)
    logging.basicConfig(format="%(message)s", stream=sys.stderr, level=numeric, force=True)
    for handler in logging.getLogger().handlers:
        handler.addFilter(RedactingFilter())
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            redact_secrets,  # no key, token or audio in any line (proxy/log_redaction.py)
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


def get_logger(**bound: object) -> structlog.stdlib.BoundLogger:
    logger: structlog.stdlib.BoundLogger = structlog.get_logger("duplex_proxy").bind(**bound)
    return logger
