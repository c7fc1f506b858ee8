"""Configuration problems: each names its key, and where it came from when that is known.

A problem's key is a dotted path (``routes.0.upstream``); ``ConfigError.locate`` adds the
TOML line it sits on, or the environment variable that set it, so an operator can go
straight to it.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Any, get_args, get_origin

from pydantic import ValidationError

Loc = tuple[str | int, ...]

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*\"?([A-Za-z0-9_\-]+)\"?\s*=")


@dataclasses.dataclass(frozen=True)
class Problem:
    loc: Loc
    message: str
    where: str = ""  # "line 12" or "DUPLEX_PROXY__SERVER__PORT", once located

    @property
    def key(self) -> str:
        return ".".join(str(p) for p in self.loc) or "(config)"

    def __str__(self) -> str:
        where = f" ({self.where})" if self.where else ""
        if not self.loc:
            return f"{self.message}{where}"
        return f"{self.key}{where}: {self.message}"


class ConfigError(ValueError):
    """The configuration is invalid; every problem names its key and why."""

    def __init__(self, problems: str | Sequence[Problem]) -> None:
        self.problems: tuple[Problem, ...] = (
            (Problem((), problems),) if isinstance(problems, str) else tuple(problems)
        )
        super().__init__("; ".join(str(p) for p in self.problems))

    def locate(self, toml_text: str | None, environ: Mapping[str, str], prefix: str) -> ConfigError:
        """The same problems, each with its TOML line or the variable that set it."""
        located = []
        for p in self.problems:
            env = prefix + "__".join(str(part).upper() for part in p.loc)
            setters = sorted(
                n for n in environ if n.upper() == env or n.upper().startswith(env + "__")
            )
            if p.loc and setters:
                where = f"from {', '.join(setters)}"
            else:
                line = toml_line(toml_text, p.loc) if toml_text else None
                where = f"line {line}" if line else ""
            located.append(dataclasses.replace(p, where=where))
        return ConfigError(located)


def problems_from(exc: ValidationError, root: type[Any]) -> list[Problem]:
    """One Problem per pydantic error, unknown keys with a "did you mean"."""
    problems = []
    for err in exc.errors(include_url=False):
        loc = tuple(p for p in err["loc"] if p != "__root__")
        message = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "unexpected_keyword_argument" or err["type"] == "extra_forbidden":
            message = "unknown key" + _did_you_mean(str(loc[-1]), _fields_at(root, loc[:-1]))
        elif err["type"] == "missing":
            message = "required key is missing"
        elif err["type"] != "value_error" and not isinstance(err.get("input"), dict | list):
            message = f"{message} (got {err['input']!r})"
        problems.append(Problem(loc, message))
    return problems


def _did_you_mean(key: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if close:
        return f"; did you mean {close[0]!r}?"
    return f"; known keys: {', '.join(known)}" if known else ""


def _fields_at(root: type[Any], path: Loc) -> list[str]:
    """Field names of the section that ``path`` leads to from ``root``."""
    cls: Any = root
    for part in path:
        if isinstance(part, int):
            continue
        field = {f.name: f for f in dataclasses.fields(cls)}.get(str(part))
        if field is None:
            return []
        cls = _section_type(cls, field.name)
        if cls is None:
            return []
    return [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else []


def _section_type(cls: Any, name: str) -> Any:
    hint = cls.__pydantic_fields__[name].annotation
    if get_origin(hint) is tuple:  # routes: tuple[Route, ...]
        hint = get_args(hint)[0]
    return hint if dataclasses.is_dataclass(hint) else None


def toml_line(text: str, loc: Loc) -> int | None:
    """1-based line of the key at ``loc`` in TOML ``text`` (its table's line if the key
    is not written there), for plain tables, ``[[arrays]]`` and top-level keys."""
    if not loc:
        return None
    if len(loc) >= 2 and isinstance(loc[1], int):
        table, nth, rest = str(loc[0]), loc[1], loc[2:]
    elif len(loc) >= 2:
        table, nth, rest = str(loc[0]), 0, loc[1:]
    else:
        table, nth, rest = "", 0, loc
    lines = text.splitlines()
    start, seen, current = (0 if table == "" else None), -1, ""
    for i, line in enumerate(lines):
        header = _HEADER.match(line)
        if header:
            current = header.group(2).strip()
            if start is not None:
                break
            if current == table:
                seen += 1
                if seen == nth:
                    start = i
            continue
        key = _KEY.match(line)
        if key is None:
            continue
        if start is not None and rest and key.group(1) == str(rest[0]):
            return i + 1
        if start is None and current == "" and table and key.group(1) == table:
            return i + 1  # an inline table: `server = { port = 1 }`
    return None if start is None or table == "" else start + 1
