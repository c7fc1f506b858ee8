"""What ``bench/sessions.py`` reads off the proxy's ``/metrics``: its VAD decision-lag
histogram, the client frames it read, the windows Silero ran; and the p99 of the lag
between two reads."""

from __future__ import annotations

import aiohttp


async def proxy_counts(http: aiohttp.ClientSession, base: str) -> dict[float | str, float]:
    """From the proxy's /metrics: its VAD decision-lag histogram (cumulative bucket
    counts by bound), under "frames_in" the client frames it has read, under
    "vad_rows" the windows Silero ran (not those the quiet gate answered)."""
    async with http.get(base + "/metrics") as resp:
        text = await resp.text()
    out: dict[float | str, float] = {"frames_in": 0.0, "vad_rows": 0.0}
    for line in text.splitlines():
        if line.startswith("duplex_proxy_vad_decision_lag_seconds_bucket{"):
            le = float(line.split('le="', 1)[1].split('"', 1)[0])
            out[le] = out.get(le, 0.0) + float(line.rsplit(" ", 1)[1])
        elif line.startswith('duplex_proxy_frames_total{direction="client_to_upstream"}'):
            out["frames_in"] += float(line.rsplit(" ", 1)[1])
        elif line.startswith("duplex_proxy_vad_batch_windows_sum"):
            out["vad_rows"] += float(line.rsplit(" ", 1)[1])
    return out


def bucket_p99_ms(
    before: dict[float | str, float], after: dict[float | str, float]
) -> float | None:
    """The p99 of what was observed in between, interpolated inside its bucket (the
    histogram's buckets include 0.1 s, the limit); beyond the last bucket, None."""
    bounds = sorted(le for le in after if isinstance(le, float))
    counts = [after[le] - before.get(le, 0.0) for le in bounds]
    total = counts[-1] if counts else 0.0
    if total <= 0:
        return None
    want, lo, below = 0.99 * total, 0.0, 0.0
    for le, n in zip(bounds, counts, strict=True):
        if n >= want:
            if le == float("inf"):
                return None
            share = (want - below) / (n - below) if n > below else 1.0
            return round((lo + share * (le - lo)) * 1000, 1)
        lo, below = le, n
    return None
