"""The household sounds of ``bench/stimuli.py --variety household``: every sound at both
levels, at the level its manifest states, the question opening the cases without being
one, and the same clips from the same seed."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.servers import ROOT

pytestmark = pytest.mark.skipif(
    shutil.which("espeak-ng") is None, reason="espeak-ng says the question"
)


def test_every_sound_at_both_levels_as_stated(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import bargein_cases
    import stimuli
    import stimuli_household

    manifest = stimuli.make(tmp_path / "a", 3, "household")
    noises = [c for c in manifest["clips"] if c["kind"] == "noise"]
    assert [c["kind"] for c in manifest["clips"]].count("question") == 1
    assert {(c["noise"], c["dbfs"]) for c in noises} == {
        (name, -20.0 - below)
        for name in stimuli_household.SOUNDS
        for below in stimuli_household.LEVELS_BELOW_USER_DB
    }
    for clip in noises:
        x = bargein_cases.read_wav(tmp_path / "a" / clip["file"]) / 32768
        assert np.isfinite(x).all() and x.size == 3 * 24000
        level = 20 * np.log10(float(np.sqrt(np.mean(x**2))))
        # Within a dB of the stated level; a loud impact may clip a little under it.
        assert clip["dbfs"] - 1.0 <= level <= clip["dbfs"] + 0.1, (clip["file"], level)
    cases = bargein_cases.build_cases(tmp_path / "a", ["m"])
    assert sum(c.kind == "noise" for c in cases) == len(noises)
    assert not [c for c in cases if c.name.startswith("question")]
    again = stimuli.make(tmp_path / "b", 3, "household")
    for clip in again["clips"][1:]:
        same = (tmp_path / "a" / clip["file"]).read_bytes()
        assert (tmp_path / "b" / clip["file"]).read_bytes() == same
