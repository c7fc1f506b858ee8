"""The resume bench's checks can fail: a gap or a repeat at a seam, an answer both
completed and cut (bench/resume_checks.py)."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from tests.servers import ROOT

if str(ROOT / "bench") not in sys.path:
    sys.path.append(str(ROOT / "bench"))  # after the project's own modules
import resume_checks
from resume_records import Answer, Outcome

RATE = 24000


def _voice(samples: int) -> np.ndarray[Any, Any]:
    rng = np.random.default_rng(7)
    return (rng.normal(size=samples) * 3000).clip(-32000, 32000).astype(np.int16)


def _session(moved: np.ndarray[Any, Any], seam: int) -> Outcome:
    ref = _voice(RATE * 3 // 2)
    first = Answer("resp_1", 1, audio=bytearray(ref.tobytes()), status="completed")
    second = Answer("resp_2", 2, audio=bytearray(moved.tobytes()), status="completed")
    second.moves, second.seams = 1, [seam]
    return Outcome("turn", answers=[first, second])


def _seams(moved: np.ndarray[Any, Any], seam: int) -> dict[str, Any]:
    stats: dict[str, Any] = resume_checks.audio_seams([_session(moved, seam)])["turn"]
    return dict(stats["moved_completed"])


def test_an_answer_that_moved_intact_is_continuous_at_its_seam() -> None:
    stats = _seams(_voice(RATE * 3 // 2), 12000)
    assert stats["seams_continuous"] == 1
    assert stats["max_seam_jump_samples"] == 0
    assert stats["max_abs_diff_aligned"] == stats["max_abs_diff_at_seams"] == 0
    assert stats["max_len_diff_samples"] == 0


def test_a_gap_or_a_repeat_at_the_seam_shows_as_a_jump_and_in_the_length() -> None:
    ref = _voice(RATE * 3 // 2)
    gap = np.concatenate([ref[:12000], ref[12480:]])
    stats = _seams(gap, 12000)
    assert stats["seams_continuous"] == 0
    assert stats["max_seam_jump_samples"] == 480
    assert stats["max_len_diff_samples"] == 480
    repeat = np.concatenate([ref[:12000], ref[11760:]])
    assert _seams(repeat, 12000)["max_seam_jump_samples"] == 240


def test_an_answer_completed_and_cut_is_a_failure() -> None:
    def turn(status: str, truncated: int, later: list[str]) -> dict[str, Any]:
        return {
            "what": "barge_in",
            "kind": "turn",
            "drop_s": 0.3,
            "aborted": True,
            "other_replica": False,
            "status": status,
            "truncated": truncated,
            "later": later,
        }

    good = Outcome("turn", overlaps=[turn("cancelled", 1, ["completed"])])
    assert resume_checks.overlap_violations([good]) == 0
    assert resume_checks.overlaps([good])["barge_in / turn / mid-hold"]["cut once"] == 1
    for bad in (
        turn("completed", 1, ["completed"]),
        turn("cancelled", 2, ["completed"]),
        turn("cancelled", 1, []),
    ):
        assert resume_checks.overlap_violations([Outcome("turn", overlaps=[bad])]) == 1


def test_a_barge_in_cut_once_but_never_answered_is_listed_first() -> None:
    def turn(what: str, status: str, later: list[str], truncated: int = 1) -> dict[str, Any]:
        return {
            "what": what,
            "kind": "turn-long",
            "drop_s": -0.2,
            "aborted": False,
            "other_replica": False,
            "status": status,
            "truncated": truncated,
            "later": later,
        }

    # A backchannel that became a turn is odd but no failure; a barge-in cut once whose
    # turn never came is a failure, though "cut once" alone reads as the plain outcome.
    odd = turn("backchannel", "completed", ["completed"], truncated=0)
    unanswered = turn("barge_in", "cancelled", [])
    fine = turn("barge_in", "cancelled", ["completed"])
    listed = resume_checks.overlap_odd([Outcome("turn", overlaps=[odd, fine, unanswered])])
    assert [ov["verdict"] for ov in listed] == [
        ["cut once", "turn NOT answered"],
        ["became a turn (answered)"],
    ]
