"""Where configuration comes from: a TOML file, then the environment over it.

Both are pydantic-settings sources. Its environment source nests keys on ``__``
(``DUPLEX_PROXY__SERVER__PORT``) but cannot address one entry of an array of tables,
so ``IndexedEnvSource`` turns numeric parts into list indices and overlays them on the
file's entries: ``DUPLEX_PROXY__ROUTES__0__UPSTREAM`` changes the first route's upstream
and keeps the rest of it. Values are strings that validation converts (``"9000"`` for
an int); a table (``headers``) is given as JSON.
"""

from __future__ import annotations

import copy
import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import create_model
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)
from pydantic_settings.sources.utils import parse_env_vars

from proxy.config_errors import ConfigError, Problem
from proxy.config_model import Config

ENV_PREFIX = "DUPLEX_PROXY__"
_LOWER = ENV_PREFIX.lower()


def _fields_of(cls: type[Any]) -> dict[str, FieldInfo]:
    fields: dict[str, FieldInfo] = cls.__pydantic_fields__
    return fields


class _SettingsBase(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid", frozen=True
    )


#: The settings schema the sources read into: the fields of ``Config``, derived from it
#: so that a new section is declared once.
_CONFIG_FIELDS: dict[str, Any] = {
    name: (info.annotation, info) for name, info in _fields_of(Config).items()
}
ProxySettings: type[BaseSettings] = create_model(
    "ProxySettings", __base__=_SettingsBase, **_CONFIG_FIELDS
)


class IndexedEnvSource(EnvSettingsSource):
    """The environment (or a given mapping) overlaid on ``base``, numeric parts as indices."""

    def __init__(self, environ: Mapping[str, str], base: Mapping[str, Any]) -> None:
        super().__init__(ProxySettings, case_sensitive=False)
        # The mapping given, not necessarily os.environ (tests and check-config pass one).
        self.env_vars = parse_env_vars(environ, False, False, None)
        self._base = base

    def __call__(self) -> dict[str, Any]:
        tree = copy.deepcopy(dict(self._base))
        # pydantic-settings reads only the variables of known fields; a misspelt
        # section (DUPLEX_PROXY__SERVR__PORT) must not be ignored silently.
        fields = set(ProxySettings.model_fields)
        for name in self.env_vars:
            head = name[len(ENV_PREFIX) :].split("__")[0] if name.startswith(_LOWER) else None
            if head is not None and head not in fields:
                tree.setdefault(head, {})
        for key, value in super().__call__().items():
            tree[key] = _overlay(tree.get(key), value, (key,))
        return tree


def _overlay(base: Any, over: Any, loc: tuple[str | int, ...]) -> Any:
    """``over`` merged into ``base``; a dict of numeric keys addresses list entries."""
    if isinstance(over, str) and over[:1] in ("{", "["):
        try:  # a table or array given as JSON (pydantic-settings decodes only top levels)
            return json.loads(over)
        except ValueError:
            return over
    if not isinstance(over, dict):
        return over
    if isinstance(base, list) or (over and all(k.isdigit() for k in over)):
        items = list(base) if isinstance(base, list) else []
        for k, v in sorted(over.items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else -1):
            if not k.isdigit():
                name = ENV_PREFIX + "__".join(str(p).upper() for p in (*loc, k))
                raise ConfigError([Problem(loc, f"{name}: expected a numeric index, got {k!r}")])
            idx = int(k)
            while len(items) <= idx:
                items.append({})
            items[idx] = _overlay(items[idx], v, (*loc, idx))
        return items
    merged = dict(base) if isinstance(base, dict) else {}
    for k, v in over.items():
        merged[k] = _overlay(merged.get(k), v, (*loc, k))
    return merged


def apply_env(data: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, Any]:
    """``DUPLEX_PROXY__A__B=v`` variables overlaid on a parsed TOML tree (a new dict)."""
    return IndexedEnvSource(environ, data)()


def read_toml(path: Path) -> tuple[dict[str, Any], str]:
    """The file's tree and its text (for line numbers); a missing file is an error."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    try:
        return TomlConfigSettingsSource(ProxySettings, toml_file=path)(), text
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
