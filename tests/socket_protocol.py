"""The socket protocol aiohttp's WebSocket queue asks of (pause and resume reading), for
tests that drive a ``TapQueue`` or the raw splitter without a socket."""

from __future__ import annotations


class PausableProtocol:
    _reading_paused = False

    def pause_reading(self) -> None:
        self._reading_paused = True

    def resume_reading(self) -> None:
        self._reading_paused = False
