"""How the barge-in relay folds a client's updates into one (``shim/dialects/
relay_kept_update.py``, ``folded``): a later spelling of a setting replaces the earlier
one, a null vLLM-Omni ignores leaves the earlier settings, and the first update too is
stated as vLLM-Omni reads it.
"""

from __future__ import annotations

from typing import Any

from shim.dialects.relay_kept_update import folded
from tests.relay_kept_updates import VAD, VOICE_ECHO


def fold(*updates: dict[str, Any]) -> dict[str, Any]:
    kept: dict[str, Any] | None = None
    for each in updates:
        kept = folded({"type": "session.update", "session": each}, kept)
    assert kept is not None
    session: dict[str, Any] = kept["session"]
    return session


def test_a_later_spelling_of_a_setting_replaces_the_earlier_one() -> None:
    assert fold({"voice": "alloy"}, {"audio": {"output": {"voice": "echo"}}}) == {
        "audio": {"output": {"voice": "echo"}}
    }
    assert fold(VOICE_ECHO, {"voice": None}) == {
        "voice": None,
        "audio": {"output": {"format": {"type": "audio/g711_ulaw"}}},
    }
    assert fold({"max_response_output_tokens": 100}, {"max_output_tokens": 200}) == {
        "max_output_tokens": 200
    }
    assert fold({"modalities": ["text", "audio"]}, {"output_modalities": ["text"]}) == {
        "output_modalities": ["text"]
    }


def test_a_null_vllm_omni_ignores_leaves_the_earlier_settings() -> None:
    extra = {"overlap_policy": "barge_in", "a": 1}
    assert fold({"extra_body": extra}, {"extra_body": None}) == {"extra_body": extra}
    assert fold(VOICE_ECHO, {"audio": None}) == VOICE_ECHO
    turn = {"audio": {"input": {"turn_detection": VAD}}}
    assert fold(turn, VOICE_ECHO, {"audio": {"output": None}}) == {
        "audio": {**turn["audio"], **VOICE_ECHO["audio"]}
    }
    assert fold({"temperature": 0.5}, {"temperature": None}) == {"temperature": 0.5}


def test_the_first_update_too_is_stated_as_vllm_omni_reads_it() -> None:
    """A replica opening a fresh upstream with it (``DuplexSessionConfig.from_realtime``
    reads ``max_response_output_tokens or max_output_tokens``) reads what the lost
    upstream did (``apply_realtime_update`` takes the first spelling named)."""
    first = {"max_response_output_tokens": None, "max_output_tokens": 200, "voice": 7}
    assert fold({**first, "extra_body": None}) == {"max_response_output_tokens": None}
