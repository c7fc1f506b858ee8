"""``shim.wire.error_code`` reads both error shapes the proxy meets."""

from shim.wire import error, error_code


def test_nested_code() -> None:
    assert error_code(error("session_resume_expired", "gone")) == "session_resume_expired"


def test_flat_code() -> None:
    assert error_code({"type": "error", "error": "no duplex here", "code": "unsupported"}) == (
        "unsupported"
    )


def test_nested_wins_over_flat() -> None:
    assert error_code({"error": {"code": "a"}, "code": "b"}) == "a"


def test_empty_nested_falls_back_to_flat() -> None:
    assert error_code({"error": {"code": ""}, "code": "b"}) == "b"


def test_no_code() -> None:
    assert error_code({"type": "error", "error": {"message": "x"}}) is None
    assert error_code({"type": "error", "code": 7}) is None
    assert error_code({}) is None
