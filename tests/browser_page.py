"""The talk page in Debian's headless Chromium: the browser's flags (a fake microphone
playing a WAV file), that file, and what the page's ``talk`` object says."""

from __future__ import annotations

import wave
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="needs Debian's chromium at /usr/bin/chromium (apt-get install chromium)",
)
WAIT_MS = 45_000


def write_wav(path: Path, pcm: bytes, rate: int = 24000) -> Path:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm)
    return path


def chromium_args(clip: Path) -> list[str]:
    return [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--use-fake-ui-for-media-stream",
        "--use-fake-device-for-media-stream",
        f"--use-file-for-fake-audio-capture={clip}",
    ]


async def state(page: Any) -> dict[str, Any]:
    got: dict[str, Any] = await page.evaluate(
        """() => ({mode: talk.mode, lastSeq: talk.lastSeq, lost: talk.lost,
        duplicated: talk.duplicated, playedMs: talk.playedMs, receivedMs: talk.receivedMs,
        speechStarted: talk.speechStarted, bargeIns: talk.bargeIns,
        truncations: talk.truncations, played: Object.fromEntries(talk.played),
        resumes: talk.resumes.map(r => ({afterSeq: r.afterSeq, firstSeq: r.firstSeq, ok: r.ok})),
        errors: talk.errors, sentMs: talk.sentMs})"""
    )
    return got
