"""``duplex-proxy probe``: what does a realtime voice endpoint really do?

Connects to anything that speaks the OpenAI Realtime or the vLLM-Omni duplex
protocol (a vLLM-Omni server, this proxy, ...) and measures ten things, each
with a verdict and the numbers behind it: what it declares, whether it hears the
user while it speaks, barge-in, truncation, resume, deduplication after a
reconnect, backpressure, fairness, its session capacity and (from the model
server's metrics) GPU memory. ``docs/probe.md`` explains each check.

Layout: ``cli`` (arguments, exit status) -> ``runner`` (checks in order) ->
``checks/*`` (one module per check) over ``client``/``handshake`` (the WebSocket
client, both dialects), ``speaker`` (real-time audio out), ``tracks`` (responses
in), ``stimulus`` (the speech), ``metrics`` (Prometheus samples); ``report``
renders the table and the JSON, ``compare`` two runs side by side,
``html_report`` + ``plots`` the HTML report.
"""
