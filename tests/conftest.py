"""Shared fixtures: a real redis-server per test or per session (tests/redis_server.py)."""

from tests.redis_server import redis_server, redis_server_session

__all__ = ["redis_server", "redis_server_session"]
