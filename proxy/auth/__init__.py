"""Client authentication and admission: who may open a session, where and how often.

Everything here is decided before the WebSocket upgrade (``admission.py``), so a
refused client gets a plain HTTP 401, 403 or 429 and never reaches an upstream. The
configuration is ``[auth]`` (``proxy/config_auth.py``); the threat model is in the
README's "Security" section.
"""
