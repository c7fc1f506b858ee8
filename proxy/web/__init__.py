"""The browser page at ``GET /``: talk to the proxy and watch what it sees."""

from proxy.web.routes import add_web_routes, route_models

__all__ = ["add_web_routes", "route_models"]
