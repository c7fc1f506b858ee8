"""Where the labelled speech corpus is (``DUPLEX_PROXY_CORPUS`` names another place), and
the mark that skips a test without it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CORPUS = Path(
    os.environ.get(
        "DUPLEX_PROXY_CORPUS", Path(__file__).resolve().parents[2] / "shared" / "corpus" / "dev"
    )
)
needs_corpus = pytest.mark.skipif(
    not (CORPUS / "manifest.json").exists(), reason=f"no corpus at {CORPUS}"
)
