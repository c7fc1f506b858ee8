"""The times a session snapshot carries, told on the wall clock in the store.

The shim's times are the edge's clock (``proxy/clock.py``: monotonic, one per
process), which another replica does not share. A snapshot's times (where each
assistant item's playback ends, ``shim/played_snapshot.py``; when the idle timer's
quiet began and since when no client is attached, ``shim/idle_timeout.py``) are stored
on the wall clock instead: the edge adds its clock's offset to the wall clock on the
way in (``to_wall``), and the replica that takes the session over subtracts its own on
the way out (``from_wall``), each offset taken at the time (``proxy/clock.py``: a step
of the wall clock is picked up), and no time restored later than it can mean
(``_clamp``). A stored snapshot that does not say so (``KEY``: written
before its times were carried) has its times dropped: the items end long ago, the
timer starts afresh.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from shim import idle_timeout, played_snapshot

KEY = "clock"
WALL = {"v": 1, "base": "wall"}


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _each_time(snap: dict[str, Any], move: Callable[[float], float | None]) -> None:
    played = snap.get(played_snapshot.KEY)
    for entry in played if isinstance(played, list) else ():
        if isinstance(entry, dict) and "play_end_ms" in entry:
            end = entry["play_end_ms"]
            entry["play_end_ms"] = move(float(end)) if _number(end) else None
    idle = snap.get(idle_timeout.KEY)
    for key in ("since_ms", "away_ms"):
        if isinstance(idle, dict) and key in idle:
            at = idle[key]
            idle[key] = move(float(at)) if _number(at) else None


def _times_copied(snap: Mapping[str, Any]) -> dict[str, Any]:
    """``snap`` with fresh copies of the containers ``_each_time`` writes into (the
    played items, the idle timer's part); the rest is shared, never written. A deep
    copy of the whole snapshot cost ~90 µs per checkpoint (docs/benchmarks.md)."""
    out = dict(snap)
    played = out.get(played_snapshot.KEY)
    if isinstance(played, list):
        out[played_snapshot.KEY] = [dict(e) if isinstance(e, dict) else e for e in played]
    idle = out.get(idle_timeout.KEY)
    if isinstance(idle, dict):
        out[idle_timeout.KEY] = dict(idle)
    return out


def to_wall(snap: Mapping[str, Any], offset_ms: float) -> dict[str, Any]:
    """``snap`` with its times on the wall clock (``offset_ms``: wall minus edge);
    ``snap`` itself is left as it was."""
    out = _times_copied(snap)
    _each_time(out, lambda t: round(t + offset_ms, 3))
    out[KEY] = dict(WALL)
    return out


def _clamp(snap: dict[str, Any], now_ms: float) -> None:
    """Times no restore can mean, brought back to the latest they can be: an item's
    playback ends at the latest its whole audio after ``now_ms`` (played from now on,
    ``shim/playback.py``), the quiet and the time away began at the latest now. A
    stored time is only as right as the wall clocks it was told on: a replica's clock
    stepped after its offset was taken, one that another replica reads differently,
    would otherwise hold the idle timeout off (and the edge ticking) for as long as
    they disagree. One too early needs no clamp: the item played out, the quiet is
    due; it is the wait it would have been."""
    played = snap.get(played_snapshot.KEY)
    for entry in played if isinstance(played, list) else ():
        if not isinstance(entry, dict):
            continue
        end, sent, rate = entry.get("play_end_ms"), entry.get("sent_samples"), entry.get("rate_hz")
        if isinstance(end, (int, float)) and isinstance(sent, int) and isinstance(rate, int):
            if rate > 0 and not isinstance(end, bool):
                entry["play_end_ms"] = min(float(end), now_ms + max(0, sent) * 1000.0 / rate)
    idle = snap.get(idle_timeout.KEY)
    for key in ("since_ms", "away_ms"):
        at = idle.get(key) if isinstance(idle, dict) else None
        if isinstance(idle, dict) and isinstance(at, (int, float)) and not isinstance(at, bool):
            idle[key] = min(float(at), now_ms)


def from_wall(snap: Mapping[str, Any], offset_ms: float, now_ms: float) -> dict[str, Any]:
    """A stored snapshot with its times on this edge's clock (``offset_ms``: wall minus
    edge, taken now; ``now_ms``: now on the edge's clock), none where it does not say
    they are on the wall clock, and none later than it can mean (``_clamp``)."""
    out = copy.deepcopy(dict(snap))
    told = out.pop(KEY, None) == WALL
    _each_time(out, (lambda t: t - offset_ms) if told else (lambda t: None))
    _clamp(out, now_ms)
    return out
