"""The I/O edge of the emulated modes: feed the shim, execute what it returns.

Everything that happens to a session (a client frame, an upstream frame, a VAD
result, a clock tick, a client attaching or leaving) becomes one input on one
queue, handled strictly in order; shim inputs go to the pure core (``shim/``) and
its actions are executed here. The proxy owns the client-facing session in these
modes: its own ``server_event_seq``, replay log and client event de-duplication
(docs/protocol.md). A session outlives its connection for ``disconnect_grace_s`` so
the client can resume, here or (through the store) on another replica.
"""
