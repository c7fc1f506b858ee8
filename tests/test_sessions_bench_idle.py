"""``bench/sessions.py``'s idle cost (``bench/proc_stats.py`` ``idle_figures``) gives a
figure per idle session only when some were open: with ``--idle 0`` the difference of
two windows with none open is noise, not a cost."""

from __future__ import annotations

import sys

from tests.servers import ROOT

sys.path.insert(0, str(ROOT / "bench"))

import proc_stats


def test_no_idle_session_gives_no_per_session_figure() -> None:
    figures = proc_stats.idle_figures(none=0.004, busy=0.001, opened=0, rss_mb_added=-0.2)
    assert figures["idle_sessions"] == 0
    assert figures["cpu_ms_per_idle_session_s"] is None
    assert figures["rss_mb_per_idle_session"] is None
    assert figures["cpu_pct_no_sessions"] == 0.4


def test_idle_sessions_cost_what_they_added_each() -> None:
    figures = proc_stats.idle_figures(none=0.004, busy=0.024, opened=200, rss_mb_added=7.0)
    assert figures["cpu_ms_per_idle_session_s"] == 0.1  # 2 % of a core over 200
    assert figures["rss_mb_per_idle_session"] == 0.035
