"""The proxy's Prometheus metrics read back for the tests: ``/metrics`` scraped into samples
keyed by name and labels, and one metric's sum over the series carrying given labels."""

from __future__ import annotations

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(base: str) -> Samples:
    async with aiohttp.ClientSession() as http, http.get(base + "/metrics") as resp:
        assert resp.status == 200
        assert resp.content_type == "text/plain"
        text = await resp.text()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum over ``name``'s series that carry ``labels`` (and maybe others)."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= set(ls))
