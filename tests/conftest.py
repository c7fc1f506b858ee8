"""Shared fixtures: a real redis-server per test or per session (tests/redis_server.py),
and vLLM-Omni's own ``DuplexClient`` module, loaded once per run (tests/vllm_omni_client.py)."""

from tests.redis_server import redis_server, redis_server_session
from tests.vllm_omni_client import duplex_client_module

__all__ = ["duplex_client_module", "redis_server", "redis_server_session"]
