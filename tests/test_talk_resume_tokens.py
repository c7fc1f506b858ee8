"""What the ``talk`` command does with a refused resume (``proxy/talk/resume_tokens.py``),
as docs/protocol.md ("Resume") tells clients: try ``session_resume_unavailable`` and
``upstream_unavailable`` again, the refusal's token first and the client's own if that
is denied; give up on the rest."""

from __future__ import annotations

import pytest

from proxy.talk.resume_tokens import MAX_BACKOFF_S, MAX_REFUSALS, ResumeTokens


def test_unavailable_is_tried_again_with_the_same_token() -> None:
    t = ResumeTokens("mine")
    assert t.refused("session_resume_unavailable")
    assert (t.token, t.other) == ("mine", None)


def test_an_upstream_that_could_not_take_the_resume_is_tried_again_with_the_same_token() -> None:
    t = ResumeTokens("mine")
    assert t.refused("upstream_unavailable")
    assert (t.token, t.other) == ("mine", None)
    assert t.backoff_s() > 0


@pytest.mark.parametrize("denied", ["session_resume_denied", "invalid_resume_token"])
def test_a_token_given_with_unavailable_is_tried_first_then_the_clients_own(denied: str) -> None:
    t = ResumeTokens("mine")
    assert t.refused("session_resume_unavailable", "rotated")
    assert (t.token, t.other) == ("rotated", "mine")
    assert t.refused(denied)  # the store kept the client's own
    assert (t.token, t.other) == ("mine", None)
    assert not t.refused(denied), "both tried: the session is gone"


def test_the_same_token_given_again_is_not_kept_twice() -> None:
    t = ResumeTokens("mine")
    assert t.refused("session_resume_unavailable", "mine")
    assert (t.token, t.other) == ("mine", None)
    assert not t.refused("session_resume_denied")


@pytest.mark.parametrize(
    "code",
    [
        "session_resume_denied",
        "invalid_resume_token",
        "session_resume_expired",
        "session_resume_gap",
        "session_resume_conflict",
        "invalid_session_resume",
    ],
)
def test_any_other_refusal_ends_the_session(code: str) -> None:
    assert not ResumeTokens("mine").refused(code)


def test_refusals_in_a_row_are_bounded_and_back_off() -> None:
    t = ResumeTokens("mine")
    pauses = []
    for _ in range(MAX_REFUSALS):
        assert t.refused("session_resume_unavailable")
        pauses.append(t.backoff_s())
    assert pauses == sorted(pauses) and pauses[0] < pauses[-1] <= MAX_BACKOFF_S
    assert not t.refused("session_resume_unavailable"), "gone after too many"


def test_a_resume_starts_the_count_again_with_its_new_token() -> None:
    t = ResumeTokens("mine")
    assert t.refused("session_resume_unavailable", "rotated")
    t.given("newest")
    assert (t.token, t.other, t.refusals) == ("newest", None, 0)
    t.given(None)  # a resume that named no token keeps the one held
    assert t.token == "newest"
