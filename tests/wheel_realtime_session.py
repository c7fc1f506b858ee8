"""vLLM-Omni 0.30.0's own session reader, for tests that check the proxy against it.

The ``wheel_session`` fixture loads ``protocol/realtime/session.py`` (and the
``formats.py`` it imports) from the wheel (tests/vllm_omni_client.py fetches and
checks it) as modules of their own names; a test module imports the fixture and
names it in ``__all__``.
"""

from __future__ import annotations

import sys
import types
import zipfile
from collections.abc import Iterator

import pytest

from tests.vllm_omni_client import VERSION, WHEEL, fetch_client_sources


@pytest.fixture(scope="module")
def wheel_session(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[types.ModuleType]:
    """``protocol/realtime/session.py`` (and the ``formats.py`` it imports) from the
    0.30.0 wheel, as modules of their own names."""
    store = getattr(request.config, "cache", None)
    name = f"vllm-omni-{VERSION}"
    cache = store.mkdir(name) if store is not None else tmp_path_factory.mktemp(name)
    fetch_client_sources(cache)  # downloads and checks the wheel
    prefix = "vllm_omni/protocol/realtime/"
    with zipfile.ZipFile(cache / WHEEL) as archive:
        formats_src = archive.read(prefix + "formats.py").decode()
        session_src = archive.read(prefix + "session.py").decode()
    names = ("wheel_realtime_formats", "wheel_realtime_session")
    formats = types.ModuleType(names[0])
    sys.modules[names[0]] = formats
    exec(compile(formats_src, prefix + "formats.py", "exec"), formats.__dict__)
    session = types.ModuleType(names[1])
    sys.modules[names[1]] = session
    session_src = session_src.replace("vllm_omni.protocol.realtime.formats", names[0])
    exec(compile(session_src, prefix + "session.py", "exec"), session.__dict__)
    try:
        yield session
    finally:
        for module in names:
            sys.modules.pop(module, None)
