"""The audio-time replays' session settings, and the flag that changes them.

``bench/bargein_replay.py`` and ``bench/bargein_relay_replay.py`` run the shim with the
same ``ShimSettings`` (a turn from 96 ms of speech); ``--background-pause-ms`` sets
``[vad] background_pause_ms`` in both.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shim.settings import ShimSettings


def add_settings_flags(ap: argparse.ArgumentParser) -> None:
    """The replays' flags for ``replay_settings``."""
    ap.add_argument(
        "--background-pause-ms",
        type=int,
        default=None,
        help="[vad] background_pause_ms (not given: the code's default)",
    )


def replay_settings(background_pause_ms: int | None = None) -> ShimSettings:
    """The settings a replay's session runs with; ``None``: the code's default."""
    # Imported here: bench/bargein_relay_replay.py --root puts another checkout's shim
    # first on the path only once its flags (added above) are read.
    from shim.settings import ShimSettings
    from shim.vad_gate import VadParams

    extra: dict[str, Any] = {}
    if background_pause_ms is not None:
        extra["background_pause_ms"] = background_pause_ms
    return ShimSettings(vad=VadParams(min_speech_ms=96), **extra)
