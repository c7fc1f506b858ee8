"""The Grafana dashboard in deploy/grafana reads only metrics the proxy exposes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from proxy.metrics import Metrics

DASHBOARD = Path(__file__).resolve().parents[1] / "deploy" / "grafana" / "duplex-proxy.json"
SUFFIXES = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
}


def exposed_names() -> set[str]:
    """Every series name the app's registry renders on /metrics, by family type."""
    names: set[str] = set()
    for family in text_string_to_metric_families(Metrics().render().decode()):
        names.update(family.name + suffix for suffix in SUFFIXES[family.type])
    return names


def expressions(node: Any) -> list[str]:
    """Every PromQL expression in the dashboard: panel targets and variable queries."""
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("expr", "definition") and isinstance(value, str):
                found.append(value)
            else:
                found += expressions(value)
    elif isinstance(node, list):
        for item in node:
            found += expressions(item)
    return found


def test_dashboard_is_json_and_queries_only_exposed_metrics() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["title"]
    exprs = expressions(dashboard)
    assert len(exprs) >= 10
    exposed = exposed_names()
    used: set[str] = set()
    for expr in exprs:
        for opener, closer in ("()", "[]", "{}"):
            assert expr.count(opener) == expr.count(closer), expr
        names = set(re.findall(r"\bduplex_proxy_[a-z_]+\b", expr))
        assert names, f"no proxy metric in {expr!r}"
        unknown = names - exposed
        assert not unknown, f"{expr!r} reads metrics the proxy does not expose: {unknown}"
        used |= names
    # The latencies and the operations signals each have a panel.
    for family in (
        "duplex_proxy_time_to_first_audio_seconds_bucket",
        "duplex_proxy_barge_in_stop_seconds_bucket",
        "duplex_proxy_upstream_dial_seconds_bucket",
        "duplex_proxy_resume_seconds_bucket",
        "duplex_proxy_vad_inference_seconds_bucket",
        "duplex_proxy_vad_decision_lag_seconds_bucket",
        "duplex_proxy_sessions_active",
        "duplex_proxy_route_up",
        "duplex_proxy_draining",
    ):
        assert family in used, family


def test_panels_have_unique_ids_and_a_datasource() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
            assert panel["targets"], panel["title"]
