"""Configuration: a TOML file, overridable key by key from the environment.

Every key can be set as ``DUPLEX_PROXY__SECTION__KEY=value``; array-of-table entries
are addressed by index: ``DUPLEX_PROXY__ROUTES__0__UPSTREAM=ws://...``. The sections
are in ``proxy/config_model.py``, the sources in ``proxy/config_sources.py``, the rules
over the route table in ``proxy/config_routes.py``; this module is what the rest of
the proxy imports.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from proxy.config_auth import ApiKey, AuthConfig, AuthMode, auth_problems
from proxy.config_errors import ConfigError, Problem, problems_from
from proxy.config_model import Config, ServerConfig
from proxy.config_ops import WebConfig
from proxy.config_route import EMBEDDED_KINDS, EMBEDDED_SCHEME, MODES, Mode, Route
from proxy.config_routes import route_problems
from proxy.config_sources import ENV_PREFIX, apply_env, read_toml
from proxy.config_store import StoreConfig
from proxy.config_vad import VadConfig

__all__ = [
    "EMBEDDED_KINDS",
    "EMBEDDED_SCHEME",
    "ENV_PREFIX",
    "MODES",
    "ApiKey",
    "AuthConfig",
    "AuthMode",
    "Config",
    "ConfigError",
    "Mode",
    "Problem",
    "Route",
    "ServerConfig",
    "StoreConfig",
    "VadConfig",
    "WebConfig",
    "apply_env",
    "config_from_dict",
    "load_config",
]

_CONFIG = TypeAdapter(Config)


def config_from_dict(data: Mapping[str, Any], *, require_routes: bool = False) -> Config:
    """Validate a parsed tree; raises ConfigError listing every problem."""
    problems: list[Problem] = []
    try:
        cfg = _CONFIG.validate_python(dict(data))
    except ValidationError as exc:
        problems = problems_from(exc, Config)
    problems += route_problems(data, require_routes=require_routes)
    problems += auth_problems(data)
    if problems:
        raise ConfigError(problems)
    return cfg


def load_config(path: str | Path | None, environ: Mapping[str, str] | None = None) -> Config:
    """Read ``path`` (None: defaults alone) and the environment over it.

    What a replica serves must route somewhere, so a config without routes is refused
    here, unlike in ``config_from_dict`` which also builds partial test configs.
    """
    env = os.environ if environ is None else environ
    data: dict[str, Any] = {}
    text = None
    if path is not None:
        data, text = read_toml(Path(path))
    try:
        return config_from_dict(apply_env(data, env), require_routes=True)
    except ConfigError as exc:
        raise exc.locate(text, env, ENV_PREFIX) from None
