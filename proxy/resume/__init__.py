"""``session.resume``: reattach a client to its session, here or from the store.

The wire protocol is in docs/protocol.md: ``session.resume {session_id,
resume_token, last_received_server_event_seq}`` as the first event of a new
connection (or the same fields in the upgrade URL's query). On success the client
gets ``session.resumed`` (with a new resume token), then every event after its last
seq exactly once, in order, then live events. The connection it replaces gets
``session.replaced``. Failures are ``error`` events (``request``) that say nothing
about the session; the caller lets the client start fresh.

``takeover`` finds the session: alive on this replica (``local``), emulated in the
store (``from_store``, with ``replay`` and ``upstream_reopen``), or passthrough
(``passthrough``: the upstream resumes its own session). Lease moves are fenced
(``lease``).
"""
