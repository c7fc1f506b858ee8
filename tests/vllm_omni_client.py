"""vLLM-Omni 0.30.0's own ``DuplexClient``, loaded from the released wheel as test data.

The wheel is fetched once with pip (``--no-deps``: the package pulls in vLLM and
torch, which the client module does not need), checked against the digest PyPI
published, and only ``vllm_omni/clients/duplex.py`` and ``utils.py`` are
unpacked.  The package's own ``__init__`` imports torch, so it never runs:
:func:`load_duplex_client` registers bare parent packages whose search path is
the unpacked folder, imports the client module under its real name, and takes
every ``vllm_omni`` module out of ``sys.modules`` again when done.

``duplex_client_module`` is that module as a session-wide pytest fixture (import it
into a test module), and ``recording_connect`` a ``connect=`` for ``DuplexClient``
that keeps every event each of its connections received, before the client drops
replayed duplicates.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import subprocess
import sys
import types
import zipfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import websockets

VERSION = "0.30.0"
WHEEL = f"vllm_omni-{VERSION}-py3-none-any.whl"
#: The sha256 PyPI lists for the wheel.
WHEEL_SHA256 = "141cb0c7b9c07970e5c92a99aab9696e81682dbfa3d2bfcde359c3c1533385f4"
MEMBERS = ("vllm_omni/clients/duplex.py", "vllm_omni/clients/utils.py")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_client_sources(cache: Path) -> Path:
    """The folder holding ``vllm_omni/clients/{duplex,utils}.py`` (downloaded on first use)."""
    source = cache / "src"
    if all((source / member).is_file() for member in MEMBERS):
        return source
    wheel = cache / WHEEL
    if not wheel.is_file():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--disable-pip-version-check",
                "--quiet",
                f"vllm-omni=={VERSION}",
                "--dest",
                str(cache),
            ],
            check=True,
            timeout=600,
        )
    actual = _sha256(wheel)
    if actual != WHEEL_SHA256:
        wheel.unlink()
        raise RuntimeError(f"{WHEEL} has sha256 {actual}, expected {WHEEL_SHA256}")
    with zipfile.ZipFile(wheel) as archive:
        for member in MEMBERS:
            archive.extract(member, source)
    return source


@contextlib.contextmanager
def load_duplex_client(source: Path) -> Iterator[types.ModuleType]:
    """``vllm_omni.clients.duplex`` imported from ``source`` without the package __init__."""
    if any(name == "vllm_omni" or name.startswith("vllm_omni.") for name in sys.modules):
        raise RuntimeError("a vllm_omni package is already imported")
    root = types.ModuleType("vllm_omni")
    root.__path__ = [str(source / "vllm_omni")]
    clients = types.ModuleType("vllm_omni.clients")
    clients.__path__ = [str(source / "vllm_omni" / "clients")]
    root.clients = clients  # type: ignore[attr-defined]
    sys.modules["vllm_omni"] = root
    sys.modules["vllm_omni.clients"] = clients
    try:
        yield importlib.import_module("vllm_omni.clients.duplex")
    finally:
        for name in [n for n in sys.modules if n == "vllm_omni" or n.startswith("vllm_omni.")]:
            del sys.modules[name]


@pytest.fixture(scope="session")
def duplex_client_module(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[types.ModuleType]:
    """``vllm_omni.clients.duplex`` for a whole test run (import it into a test module)."""
    store = getattr(request.config, "cache", None)  # None under -p no:cacheprovider
    name = f"vllm-omni-{VERSION}"
    cache = store.mkdir(name) if store is not None else tmp_path_factory.mktemp(name)
    with load_duplex_client(fetch_client_sources(cache)) as module:
        yield module


class RecordingSocket:
    """A ``websockets`` connection as ``DuplexClient``'s transport, keeping every event
    the client received on it (raw, before the client drops replayed duplicates)."""

    def __init__(self, ws: Any, received: list[dict[str, Any]]) -> None:
        self._ws = ws
        self._received = received

    async def send(self, data: str) -> None:
        await self._ws.send(data)

    async def recv(self) -> str | bytes:
        raw: str | bytes = await self._ws.recv()
        if isinstance(raw, str):
            self._received.append(json.loads(raw))
        return raw

    async def close(self) -> None:
        await self._ws.close()


def recording_connect(
    received: list[dict[str, Any]],
) -> Callable[[str], Awaitable[RecordingSocket]]:
    """A ``connect=`` for ``DuplexClient`` that records what each connection received."""

    async def connect(url: str) -> RecordingSocket:
        ws = await websockets.connect(url, max_size=None)
        return RecordingSocket(ws, received)

    return connect
