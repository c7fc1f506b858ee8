"""The README's configuration reference and the shipped JSON Schema match the code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from proxy import config_reference
from proxy.config_model import Config, ServerConfig
from proxy.config_route import Route
from proxy.config_store import StoreConfig
from proxy.config_vad import VadConfig

ROOT = Path(__file__).resolve().parents[1]


def test_readme_reference_is_the_generated_one() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    expected = config_reference.splice(readme, config_reference.markdown())
    assert readme == expected, "run: uv run duplex-proxy config-reference --update README.md"


def test_shipped_json_schema_is_the_generated_one() -> None:
    shipped = (ROOT / "deploy" / "config.schema.json").read_text(encoding="utf-8")
    assert shipped == config_reference.json_schema(), (
        "run: uv run duplex-proxy config-reference --json-schema > deploy/config.schema.json"
    )


def test_every_key_has_a_type_default_and_description() -> None:
    table = config_reference.markdown()
    for prefix, cls in (
        ("server.", ServerConfig),
        ("store.", StoreConfig),
        ("vad.", VadConfig),
        ("routes[].", Route),
    ):
        for name, info in cls.__pydantic_fields__.items():
            assert info.description, f"{prefix}{name} has no description"
            row = next(line for line in table.splitlines() if f"`{prefix}{name}`" in line)
            cells = [c.strip() for c in row.strip("|").split("|")]
            assert len(cells) == 4 and all(cells), row
    assert "`default_model`" in table
    assert Config.__pydantic_fields__["default_model"].description


def test_schema_refuses_what_validation_refuses() -> None:
    schema = json.loads(config_reference.json_schema())
    server = schema["$defs"]["ServerConfig"]
    assert server["additionalProperties"] is False
    assert server["properties"]["max_sessions"]["exclusiveMinimum"] == 0


def test_config_reference_command_prints_the_table() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "proxy", "config-reference"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout == config_reference.markdown()
