"""One client connection from accept to hand-off: route it, open the upstream,
classify it, and run the mode (or a resume).

Both kinds of client are served (docs/protocol.md): the proxy dials the upstream at
once. A client that speaks first (vLLM-Omni's ``DuplexClient``) usually has its
``session.update`` in by then; it is folded into the upstream's opening update so
open-only fields such as ``ref_audio`` are honoured. A GA client that waits gets
``session.created`` as soon as the upstream session is open. Every client event that
arrives meanwhile is queued (bounded) and applied in order afterwards.
"""
