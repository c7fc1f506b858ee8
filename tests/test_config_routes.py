"""Routing by exact name and glob (``proxy/config.py``): an exact route beats a glob, is
not shadowed by an earlier glob, and a glob is refused only when an earlier glob
covers it.
"""

from __future__ import annotations

import pytest

from proxy.config import ConfigError, config_from_dict


def test_exact_route_beats_glob_and_glob_matches() -> None:
    cfg = config_from_dict(
        {
            "routes": [
                {"model": "nvidia/*", "upstream": "ws://glob/v1/realtime"},
                {"model": "nvidia/special", "upstream": "ws://exact/v1/realtime"},
            ],
            "auth": {"mode": "none"},
        }
    )
    special = cfg.route_for("nvidia/special")
    other = cfg.route_for("nvidia/other")
    assert special is not None and special.upstream == "ws://exact/v1/realtime"
    assert other is not None and other.upstream == "ws://glob/v1/realtime"
    assert cfg.route_for("openbmb/x") is None


def test_exact_route_after_a_glob_is_not_shadowed() -> None:
    cfg = config_from_dict(
        {
            "routes": [
                {"model": "a/*", "upstream": "ws://x/v1/realtime"},
                {"model": "a/b", "upstream": "ws://y/v1/realtime"},
            ],
            "auth": {"mode": "none"},
        }
    )
    route = cfg.route_for("a/b")
    assert route is not None and route.upstream == "ws://y/v1/realtime"


@pytest.mark.parametrize(
    ("first", "second", "shadowed"),
    [
        ("a/*", "a/b*", True),
        ("nvidia/*", "nvidia/[ab]*", True),
        ("*", "x?", True),
        ("a?c", "a*c", False),  # a*c also matches "abbc", which a?c does not
        ("a/b*", "a/*", False),
        ("a*", "b*", False),
    ],
)
def test_a_glob_is_refused_only_when_an_earlier_glob_covers_it(
    first: str, second: str, shadowed: bool
) -> None:
    data = {
        "routes": [
            {"model": first, "upstream": "ws://x/v1/realtime"},
            {"model": second, "upstream": "ws://y/v1/realtime"},
        ],
        "auth": {"mode": "none"},
    }
    if shadowed:
        with pytest.raises(ConfigError, match=r"routes\.1\.model: .* can never match"):
            config_from_dict(data)
    else:
        assert len(config_from_dict(data).routes) == 2
