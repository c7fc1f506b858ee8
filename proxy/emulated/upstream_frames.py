"""An upstream text frame as the shim takes it: the parsed event, nothing, or only
its place in the upstream's journal.

An event nested deeper than ``[server] max_json_depth`` could not be stamped for the
client (``proxy/json_depth.py``) and is dropped; where the upstream numbers its events
(``server_event_seq``, the duplex dialect) its number still reaches the shim, so that
the next event follows on and is not taken for one after a lost event
(``shim/dialects/relay_upstream.py``). An event too deep for the parser itself is
read for that number alone (``proxy/json_top_level.py``), which checks the rest of
its grammar as the parser would have and gives up on a frame too costly to scan."""

from __future__ import annotations

import orjson

from proxy.clock import now_ms
from proxy.json_depth import nests_deeper_than
from proxy.json_top_level import top_level_int
from proxy.logging import Logger
from proxy.state import ProxyState
from shim.inputs import UpstreamEvent

# How orjson's error begins when a document nests deeper than it reads (orjson 3.x)
_DEPTH_LIMIT = "depth limit exceeded"


def upstream_input(raw: str, state: ProxyState, log: Logger) -> UpstreamEvent | None:
    """The shim's input for the text frame ``raw``, or None: nothing to hand on."""
    limit = state.config.server.max_json_depth
    try:
        event = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        state.metrics.upstream_errors.labels("protocol").inc()
        # orjson reads 1024 levels; an object deeper is dropped as any too deep. Only
        # its depth limit sends a frame to the scan (any other error is the frame's
        # own, met before it got that deep), and a frame with too few brackets to be
        # that deep is not read again.
        if not str(error).startswith(_DEPTH_LIMIT) or raw.count("[") + raw.count("{") <= limit:
            return None
        scan = top_level_int(raw, "server_event_seq")
        if scan is None or scan.depth <= limit:
            return None
        log.warning("upstream_event_dropped", reason="nested too deeply")
        return _skipped(scan.value)
    if nests_deeper_than(raw, event, limit):
        state.metrics.upstream_errors.labels("protocol").inc()
        log.warning("upstream_event_dropped", reason="nested too deeply")
        seq = event.get("server_event_seq") if isinstance(event, dict) else None
        return _skipped(seq if isinstance(seq, int) and not isinstance(seq, bool) else None)
    if not isinstance(event, dict):
        return None
    return UpstreamEvent(event, raw, now_ms())


def _skipped(seq: int | None) -> UpstreamEvent | None:
    """A dropped event's place in the upstream's journal, if it has one."""
    if seq is None:
        return None
    return UpstreamEvent({"server_event_seq": seq}, "", now_ms(), skipped=True)
