"""Rules over the whole route table: no duplicates, no route that can never match,
one session limit per upstream server.

Routing (``Config.route_for``) tries exact names first, then globs in order, so a glob
written after a broader glob is unreachable, and two routes for the same name leave
the second one dead. Routes to one upstream server share its sessions
(``proxy/capacity.py``), so two of them naming different ``upstream_capacity`` values
contradict each other. All are mistakes an operator wants to hear about. The rules
read the raw tree, so they are reported along with any per-key problems.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from proxy.config_errors import Problem

NO_ROUTES = (
    "no routes: every model would be refused; add a [[routes]] entry "
    "(or DUPLEX_PROXY__ROUTES__0__MODEL and DUPLEX_PROXY__ROUTES__0__UPSTREAM)"
)


def _is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


def _samples(pattern: str) -> list[str] | None:
    """Strings ``pattern`` matches: each ``*`` as empty, one or two odd characters,
    each ``?`` as one, each ``[set]`` as its first member; None for a negated set."""
    out = {"": "", "1": "\x00", "2": "\x00\x01"}
    parts = re.split(r"(\*|\?|\[[^\]]+\])", pattern)
    samples = []
    for star in out.values():
        text = []
        for part in parts:
            if part == "*":
                text.append(star)
            elif part == "?":
                text.append("\x00")
            elif part.startswith("[") and len(part) > 2:
                if part[1] == "!":
                    return None
                text.append(part[1])
            else:
                text.append(part)
        samples.append("".join(text))
    return samples


def _covers(earlier: str, later: str) -> bool:
    """Whether glob ``earlier`` matches everything glob ``later`` does (conservative:
    it must match ``later``'s own text and strings ``later`` matches)."""
    samples = _samples(later)
    if samples is None:
        return False
    return all(fnmatch.fnmatchcase(t, earlier) for t in (later, *samples))


def _server(upstream: str) -> str:
    """The upstream server a URL reaches (as ``proxy/upstream_book.py`` names it)."""
    try:
        parts = urlsplit(upstream)
        port = parts.port or (443 if parts.scheme in ("wss", "https") else 80)
    except ValueError:
        return upstream  # a bad port: reported on its own key
    return f"{(parts.hostname or upstream).lower()}:{port}"


def capacity_problems(entries: list[Any] | tuple[Any, ...]) -> list[Problem]:
    """Two routes to one upstream server with different ``upstream_capacity`` values."""
    first: dict[str, tuple[int, int]] = {}  # server -> (route index, its capacity)
    problems: list[Problem] = []
    for i, route in enumerate(entries):
        if not isinstance(route, Mapping):
            continue
        capacity, upstream = route.get("upstream_capacity"), route.get("upstream")
        if not isinstance(capacity, int) or not isinstance(upstream, str):
            continue
        j, other = first.setdefault(_server(upstream), (i, capacity))
        if other != capacity:
            problems.append(
                Problem(
                    ("routes", i, "upstream_capacity"),
                    f"{capacity}, but routes.{j} reaches the same upstream server with "
                    f"{other}: one server has one session limit",
                )
            )
    return problems


def route_problems(data: Mapping[str, Any], *, require_routes: bool) -> list[Problem]:
    raw = data.get("routes") or []
    entries = raw if isinstance(raw, list | tuple) else []
    models = [
        (i, r["model"])
        for i, r in enumerate(entries)
        if isinstance(r, Mapping) and isinstance(r.get("model"), str)
    ]
    problems: list[Problem] = []
    if require_routes and not entries:
        problems.append(Problem(("routes",), NO_ROUTES))
    first_with: dict[str, int] = {}
    for n, (i, model) in enumerate(models):
        earlier = first_with.setdefault(model, i)
        if earlier != i:
            problems.append(
                Problem(("routes", i, "model"), f"duplicate of routes.{earlier}: {model!r}")
            )
            continue
        if not _is_glob(model):
            continue
        for j, other in models[:n]:
            if _is_glob(other) and _covers(other, model):
                problems.append(
                    Problem(
                        ("routes", i, "model"),
                        f"{model!r} can never match: routes.{j} ({other!r}) comes first "
                        "and covers it",
                    )
                )
                break
    problems += capacity_problems(entries)
    default = data.get("default_model")
    if isinstance(default, str) and models:
        if not any(default == m or fnmatch.fnmatchcase(default, m) for _, m in models):
            problems.append(Problem(("default_model",), f"{default!r} matches no route"))
    return problems
