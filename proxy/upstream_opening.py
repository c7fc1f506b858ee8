"""The ``session.update`` that opens an upstream session, and the URL it is dialled at.

The opening is the client's session over the route's ``session_defaults``, with
``extra_body`` merged key by key. vLLM-Omni reads an opening's overlap numbers flat,
then from ``extra_body``, that one last (``engine/duplex/config.py``,
``DuplexSessionConfig.from_event``), while a live update reads them flat only
(``apply_realtime_update``). So a number the client states flat is not overridden by
the route's ``extra_body`` copy of it: after a move the fresh upstream opens with the
client's updates folded (``shim/dialects/relay_kept_update.py``, which states them
flat), and must run the value the client set live, as the session did before.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from proxy.config import Route

# Numbers an opening reads flat and from ``extra_body`` (last), a live update flat only.
READ_FLAT_AND_EXTRA = ("overlap_short_ack_ms", "overlap_barge_in_ms", "overlap_silence_rms")


def with_query(url: str, extra: dict[str, str]) -> str:
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    query.update(extra)
    return urlunsplit(parts._replace(query=urlencode(query)))


def opening_update(
    route: Route, upstream_model: str, client_session: dict[str, Any] | None
) -> dict[str, Any]:
    """The session.update that opens the upstream session, readable by both dialects:
    the client's session over the route's defaults, ``extra_body`` key by key, a
    number the client states flat over the route's ``extra_body`` one."""
    client = client_session or {}
    session: dict[str, Any] = {**route.session_defaults, **client}
    extra, own = route.session_defaults.get("extra_body"), client.get("extra_body")
    if isinstance(extra, dict):
        # (a flat value vLLM-Omni does not take as a number, a null, leaves the route's)
        extra = {
            k: v
            for k, v in extra.items()
            if k not in READ_FLAT_AND_EXTRA or not isinstance(client.get(k), int | float)
        }
        session["extra_body"] = {**extra, **own} if isinstance(own, dict) else dict(extra)
    session["model"] = upstream_model
    return {"type": "session.update", "model": upstream_model, "session": session}
