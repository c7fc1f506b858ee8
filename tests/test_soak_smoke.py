"""The soak benchmark runs (smoke mode) and prints one JSON object with its figures.

Its timings and memory figures belong in docs/benchmarks.md, never in a test; checked here:
the shape, that faults were injected and sampled, and that no server event was lost
or duplicated across every resume.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.redis_server import find_redis_server

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.redis
@pytest.mark.timeout(200)
def test_soak_smoke_loses_and_duplicates_nothing() -> None:
    find_redis_server()  # skip (or fail in CI) without redis-server
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "soak.py"), "--smoke", "--seconds", "20", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert out.stdout.strip(), out.stderr[-2000:]
    result = json.loads(out.stdout)
    for key in ("clients", "turns", "resumes", "lost", "duplicated", "faults", "replicas"):
        assert key in result, key
    assert result["clients"] == 24
    assert result["turns"] > 0
    assert result["lost"] == 0, result["per_session"]
    assert result["duplicated"] == 0, result["per_session"]
    assert result["clients_failed"] == 0, result["errors"]
    assert result["faults"]["client_cuts"] > 0
    assert len(result["replicas"]) == 2
    for replica in result["replicas"]:
        assert replica["alive"], replica["pid"]
        assert len(replica["rss_mb"]) >= 2 and len(replica["fds"]) >= 2
        assert all(v is not None and v > 0 for _, v in replica["rss_mb"])
        assert all(v is not None and v > 0 for _, v in replica["fds"])
    assert out.returncode == 0, out.stderr[-2000:]
