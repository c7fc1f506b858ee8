"""The structlog processor that keeps keys, tokens and audio out of every log line."""

from __future__ import annotations

import io
import json
import logging

import structlog

from proxy.log_redaction import REDACTED, RedactingFilter, redact_secrets

KEY = "dpk_" + "k" * 40
TOKEN = "tok_" + "t" * 40
AUDIO = "UklGRiQAAABXQVZFZm10IBAAAAABAAEA" * 4


def rendered(**fields: object) -> tuple[str, dict[str, object]]:
    out = io.StringIO()
    log = structlog.wrap_logger(
        structlog.PrintLogger(out),
        processors=[redact_secrets, structlog.processors.JSONRenderer()],
    )
    log.info("event", **fields)
    text = out.getvalue()
    return text, json.loads(text)


def test_secret_fields_are_redacted_wherever_they_sit() -> None:
    text, line = rendered(
        authorization=f"Bearer {KEY}",
        key_id="team-a",
        headers={"Authorization": f"Bearer {KEY}", "X-Trace": "1"},
        event_sample={"type": "input_audio_buffer.append", "audio": AUDIO},
        frames=[{"type": "response.output_audio.delta", "delta": AUDIO}],
        resume_token=TOKEN,
        Token=TOKEN,
    )
    for secret in (KEY, TOKEN, AUDIO[:24]):
        assert secret not in text
    assert line["authorization"] == REDACTED and line["Token"] == REDACTED
    assert line["key_id"] == "team-a", "a key's id is not a secret"
    assert line["headers"] == {"Authorization": REDACTED, "X-Trace": "1"}


def test_secrets_inside_free_text_are_cut_out() -> None:
    raw = json.dumps({"type": "session.resume", "session_id": "sess_1", "resume_token": TOKEN})
    text, line = rendered(
        raw=raw,
        error=f"handshake failed for 'realtime, openai-insecure-api-key.{KEY}'",
        url=f"/v1/realtime?session_id=sess_1&resume_token={TOKEN}&model=m",
        note=f"upstream said: Authorization: Bearer {KEY}",
        frame=json.dumps({"type": "input_audio_buffer.append", "audio": AUDIO}),
    )
    for secret in (KEY, TOKEN, AUDIO[:24]):
        assert secret not in text
    assert "sess_1" in text and "model=m" in text, "the rest of the text stays"
    assert json.loads(str(line["raw"]))["resume_token"] == REDACTED


def test_standard_library_records_are_cleaned_too() -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(RedactingFilter())
    logger = logging.getLogger("test_log_redaction.aiohttp_like")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("Client protocols %r don't overlap", [f"openai-insecure-api-key.{KEY}"])
    finally:
        logger.removeHandler(handler)
    assert KEY not in out.getvalue() and "openai-insecure-api-key.[redacted]" in out.getvalue()
