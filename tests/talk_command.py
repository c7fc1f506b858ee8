"""The ``duplex-proxy`` command line as the talk tests run it: the script installed in the
environment (else ``python -m proxy``), with an environment free of the proxy's own
settings (``DUPLEX_PROXY__*``) and unbuffered output."""

from __future__ import annotations

import os
import sys
from pathlib import Path

PY = sys.executable
SCRIPT = Path(PY).with_name("duplex-proxy")


def command(*args: str) -> list[str]:
    """``duplex-proxy ARGS`` as installed in the environment (else ``python -m proxy``)."""
    return [str(SCRIPT), *args] if SCRIPT.exists() else [PY, "-m", "proxy", *args]


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("DUPLEX_PROXY__")}
    out["PYTHONUNBUFFERED"] = "1"
    return out
