"""The events ``talk`` sends, and the kinds of event it reads quietly.

Formats are declared up front so the proxy resamples whatever the upstream takes and
produces to 24 kHz PCM16 both ways (README.md, "Audio").
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pybase64

AUDIO_DELTAS = ("response.output_audio.delta", "response.audio.delta")
QUIET = {*AUDIO_DELTAS, "response.output_audio_transcript.delta", "response.audio_transcript.delta"}
PCM24 = {"type": "audio/pcm", "rate": 24000}
FORMATS = {
    "type": "session.update",
    "session": {
        "type": "realtime",
        "audio": {"input": {"format": PCM24}, "output": {"format": PCM24}},
    },
}


def append(frame: bytes) -> dict[str, Any]:
    return {"type": "input_audio_buffer.append", "audio": pybase64.b64encode(frame).decode()}


def resume_event(session_id: str | None, token: str | None, last_seq: int) -> dict[str, Any]:
    """``session.resume``: the first event of a new connection, to get the session back."""
    return {
        "type": "session.resume",
        "session_id": session_id,
        "resume_token": token,
        "last_received_server_event_seq": last_seq,
    }


def with_model(url: str, model: str | None) -> str:
    """``url`` asking for ``model`` (``?model=``, as the OpenAI SDK sends it), unless it does."""
    if model is None or "model" in parse_qs(urlsplit(url).query):
        return url
    return f"{url}{'&' if '?' in url else '?'}model={quote(model, safe='')}"
