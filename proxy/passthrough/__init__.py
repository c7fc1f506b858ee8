"""``passthrough``: the upstream does full duplex itself; relay frames unchanged.

After the annotated ``session.created``, every frame is forwarded as the original
text in both directions ("echo the original data instead of re-serializing it").
Upstream frames are not parsed, except the one ``session.resumed`` of a resume (to
remember the upstream's rotated token); client frames are parsed once, only to
refuse what is not an event (docs/protocol.md) before it reaches the upstream.

Resume is the upstream's own (vLLM-Omni keeps the session and its journal through
a disconnect); the proxy records which upstream holds the session so that any
replica can relay a ``session.resume`` to it.
"""
