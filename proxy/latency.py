"""The latencies a person hears in one emulated session, read off the events it is sent.

The shim decides in sample time; what the client experiences is when events leave the
proxy, so both latencies are measured here, on the way out:

* time to first audio: the user's turn ends (``input_audio_buffer.committed``) to the
  first ``response.output_audio.delta`` after it;
* barge-in stop: speech starts over a reply (``input_audio_buffer.speech_started``
  while a response is open) to the last assistant audio sent before that response
  ends ``cancelled`` for ``turn_detected`` (the cut, ``docs/architecture.md``).
"""

from __future__ import annotations

import time
from typing import Any

from proxy.metrics import Metrics


class TurnLatency:
    """One session's latency marks; ``sent`` sees every event the client is sent."""

    __slots__ = ("_last_audio", "_metrics", "_mode", "_onset", "_open", "_turn_end")

    def __init__(self, metrics: Metrics, mode: str) -> None:
        self._metrics = metrics
        self._mode = mode
        self._turn_end: float | None = None
        self._open = False  # a response is between response.created and response.done
        self._onset: float | None = None
        self._last_audio = 0.0

    def sent(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        now = time.monotonic()
        if kind == "response.output_audio.delta":
            self._last_audio = now
            if self._turn_end is not None:
                self._metrics.time_to_first_audio.labels(self._mode).observe(now - self._turn_end)
                self._turn_end = None
        elif kind == "input_audio_buffer.committed":
            self._turn_end = now
        elif kind == "response.created":
            self._open = True
        elif kind == "input_audio_buffer.speech_started" and self._open:
            self._onset = now
        elif kind == "input_audio_buffer.speech_stopped":
            self._onset = None  # a backchannel: the reply was released, not cut
        elif kind == "response.done":
            response = event.get("response") or {}
            details = response.get("status_details") or {}
            if self._onset is not None and details.get("reason") == "turn_detected":
                stopped = max(0.0, self._last_audio - self._onset)
                self._metrics.barge_in_stop.labels(self._mode).observe(stopped)
            self._open = False
            self._onset = None
