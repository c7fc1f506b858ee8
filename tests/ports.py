"""A free loopback port, for servers the tests start as processes."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A loopback TCP port free at the moment of asking."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released): a connection is refused."""
    return free_port()
