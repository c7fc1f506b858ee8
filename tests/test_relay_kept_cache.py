"""The barge-in relay's kept update (``shim/dialects/relay_kept_update.py``) is folded
again only when what it folds has changed: every checkpoint reads it. Whatever
happens in between (a new update, the last one changed in place, an opening, a
caller changing what it was given), it is what a fold from scratch gives."""

from __future__ import annotations

from typing import Any

from shim.dialects.relay_kept_update import folded
from tests.duplex_relay_script import make
from tests.relay_kept_updates import OPENED, updated


def _fresh(s: Any) -> dict[str, Any] | None:
    return None if s._last is None else folded(s._last, s._folded)


def test_the_kept_update_is_always_a_fresh_folds() -> None:
    sc = make()
    s = sc.s
    assert s.kept_update() is None
    s.opened_with(OPENED)
    assert s.kept_update() == _fresh(s)
    updated(sc, {"instructions": "Be kind."})
    first = s.kept_update()
    assert first == _fresh(s) and first is not None
    assert first["session"]["instructions"] == "Be kind."
    # A caller changing what it got changes nothing for the next one.
    first["session"]["instructions"] = "changed by a caller"
    assert s.kept_update() == _fresh(s)
    assert s.kept_update()["session"]["instructions"] == "Be kind."  # type: ignore[index]
    # The last update changed in place (as the GA relay states a fresh upstream's input).
    s._last["session"]["voice"] = "verse"
    assert s.kept_update() == _fresh(s)
    assert s.kept_update()["session"]["voice"] == "verse"  # type: ignore[index]
    # The same value as another JSON type is another fold (1 and 1.0 are equal in Python).
    s._last["session"]["overlap_silence_rms"] = 1
    as_int = s.kept_update()
    s._last["session"]["overlap_silence_rms"] = 1.0
    as_float = s.kept_update()
    assert type(as_int["session"]["overlap_silence_rms"]) is int  # type: ignore[index]
    assert type(as_float["session"]["overlap_silence_rms"]) is float  # type: ignore[index]
    updated(sc, {"voice": "alloy"})
    assert s.kept_update() == _fresh(s)
    s.opened_with(OPENED)  # a new opening starts the fold again
    assert s.kept_update() == _fresh(s)
