"""CPU time and memory of benchmark processes, from ``/proc``."""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (a proxy's workers, nginx's workers)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int(_stat(int(entry.name))[1])
            except (OSError, ValueError, IndexError):
                continue
            parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo += parents.get(p, [])
    return found


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of ``pids`` so far (exited ones count as 0)."""
    ticks = 0
    for pid in pids:
        try:
            fields = _stat(pid)
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def _status_kb(pids: list[int], key: str) -> int:
    kb = 0
    for pid in pids:
        try:
            text = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith(key):
                kb += int(line.split()[1])
    return kb


def rss_mb(pids: list[int]) -> float:
    return _status_kb(pids, "VmRSS:") / 1024


def peak_rss_mb(pids: list[int]) -> float:
    return _status_kb(pids, "VmHWM:") / 1024


def machine_cpu_seconds() -> float:
    """CPU seconds every core of the machine spent busy so far (``/proc/stat``: all but
    idle and iowait), whoever ran."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages (what `uptime` prints)."""
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def scrub_paths(svg: Path, root: Path) -> None:
    """Keep a flame graph free of this machine's paths: the checkout, the interpreter
    and temporary directories become relative or generic."""
    if not svg.exists():
        return
    text = svg.read_text()
    text = re.sub(re.escape(sys.prefix) + r"/bin/python[\d.]*", "python", text)
    text = text.replace(str(root) + "/", "")
    text = re.sub(re.escape(tempfile.gettempdir()) + r"/[^/\s&<]+/", "", text)
    svg.write_text(text)


def scheduled_ns(pid: int) -> tuple[int, int]:
    """Nanoseconds the threads of ``pid`` ran on a CPU and waited on a run queue for one
    (ready to run, a CPU busy with other work), from ``/proc/<pid>/task/*/schedstat``;
    (0, 0) where the kernel does not keep them or the process is gone."""
    ran = waited = 0
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return 0, 0
    for task in tasks:
        try:
            fields = (task / "schedstat").read_text().split()
        except OSError:
            continue  # a thread that ended meanwhile
        ran += int(fields[0])
        waited += int(fields[1])
    return ran, waited


def idle_figures(none: float, busy: float, opened: int, rss_mb_added: float) -> dict[str, Any]:
    """The idle cost's figures: CPU (a share of a core) with none and with ``opened``
    idle sessions open; with none opened (``--idle 0``) there is no per-session figure,
    and the difference of two windows would be noise."""
    return {
        "cpu_pct_no_sessions": round(100 * none, 2),
        "idle_sessions": opened,
        "cpu_ms_per_idle_session_s": round(1000 * (busy - none) / opened, 4) if opened else None,
        "rss_mb_per_idle_session": round(rss_mb_added / opened, 3) if opened else None,
    }
