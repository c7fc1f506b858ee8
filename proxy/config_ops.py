"""The operations sections of the configuration: drain, readiness checks, reload, the page.

They sit apart from ``proxy/config_model.py`` because they shape how a replica is run
(how it stops, how it tells the load balancer whether to send it clients, how it picks
up a changed file) rather than how it treats a session.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass

# Unknown keys are errors (a typo must not silently fall back to a default).
SECTION = ConfigDict(extra="forbid")


@dataclass(frozen=True, slots=True, config=SECTION)
class DrainConfig:
    """What SIGTERM does, in order (``deploy/README.md``, "Drain")."""

    # Kubernetes removes a terminating pod from the Service while SIGTERM is already on
    # its way; load balancers and kube-proxy catch up a few seconds later. Until then
    # new clients still arrive, and refusing them would fail their first attempt.
    readiness_delay_s: float = Field(
        default=5.0,
        ge=0,
        description="After SIGTERM: /readyz answers 503 at once, sessions are still taken"
        " this long, then the drain starts (SIGINT and a second signal skip it).",
    )


@dataclass(frozen=True, slots=True, config=SECTION)
class ReadinessConfig:
    """The periodic check of each route's upstream that /readyz reports."""

    check_interval_s: float = Field(
        default=5.0, gt=0, description="How often each route's upstream is checked."
    )
    check_timeout_s: float = Field(
        default=2.0,
        gt=0,
        description="A check that takes longer counts the upstream as unreachable.",
    )
    upgrade_check: bool = Field(
        default=False,
        description="Check routes without health_path by a WebSocket upgrade (no session,"
        " closed at once): one a warming vLLM-Omni holds reads warming.",
    )


@dataclass(frozen=True, slots=True, config=SECTION)
class ReloadConfig:
    """Picking up a changed config file without a restart (SIGHUP does it at once)."""

    watch_interval_s: float = Field(
        default=2.0,
        ge=0,
        description="How often the config file (or a ConfigMap's symlink) is checked"
        " for a change, which reloads it; 0: only SIGHUP reloads.",
    )


@dataclass(frozen=True, slots=True, config=SECTION)
class WebConfig:
    """The browser page (``GET /``) and its route list (``GET /v1/routes``)."""

    enabled: bool | None = Field(
        default=None,
        description="Serve the talk page at GET / and the route list; unset: only without auth.",
    )
