"""The session a GA client's connection opens the upstream with (``shim/ga_upstream.py``),
when the client spoke first with an update the proxy refuses: it changes nothing, so the
upstream opens as the proxy's session stands, with GA's defaults (server VAD)."""

from __future__ import annotations

from typing import Any

import pytest

from shim.ga_upstream import opening_session


@pytest.mark.parametrize(
    "refused",
    [
        {"type": "transcription", "audio": {"input": {"turn_detection": None}}},
        {"output_modalities": ["text"], "audio": {"input": {"turn_detection": None}}},
    ],
)
def test_a_refused_opening_update_opens_the_upstream_with_the_ga_defaults(
    refused: dict[str, Any],
) -> None:
    opening = opening_session(refused)
    assert opening == opening_session(None)
    assert opening["turn_detection"] == {"type": "server_vad"}
