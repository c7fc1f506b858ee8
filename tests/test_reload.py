"""Config reload in a real process: SIGHUP, and a ConfigMap-style symlink swap.

New sessions follow the new routes, live sessions keep the route they opened with, and
an invalid file is refused with check-config's own messages while the old config stays.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from proxy.reference.options import ReferenceOptions
from tests.proxy_process import ProxyProcess, proxy_process
from tests.resume_client import speak
from tests.servers import ROOT, Client, connect, reference, ws_url

pytestmark = [pytest.mark.slow]

BAD = '[[routes]]\nmodel = "a"\nupstream = "http://example.com/"\n'


def routes(**upstreams: str) -> str:
    """Route entries, under an explicit open ``[auth]`` (they name real upstreams)."""
    return '[auth]\nmode = "none"\n' + "".join(
        f'[[routes]]\nmodel = "{m}"\nupstream = "{u}"\n' for m, u in upstreams.items()
    )


def replace(path: Path, text: str) -> None:
    """Rewrite ``path`` in one step, as an editor or a deploy tool does."""
    tmp = path.with_suffix(".new")
    tmp.write_text(text)
    os.replace(tmp, path)


async def mode_of(c: Client) -> str:
    await c.send({"type": "session.update", "session": {"type": "realtime"}})
    created = await c.until("session.created", timeout=15)
    mode: str = created["session"]["capabilities"]["proxy"]["mode"]
    return mode


async def reloads(p: ProxyProcess, event: str) -> None:
    """Wait for one more ``event`` line in the log than there is now."""
    before = p.output().count(event)
    p.proc.send_signal(signal.SIGHUP)
    async with asyncio.timeout(15):
        while True:
            if p.output().count(event) > before:
                return
            await asyncio.sleep(0.05)


async def test_sighup_applies_new_routes_to_new_sessions_and_refuses_a_bad_file(
    tmp_path: Path,
) -> None:
    head = "[reload]\nwatch_interval_s = 0\n"  # SIGHUP alone reloads here
    async with (
        reference("turn", reply_ms=800) as turn,
        reference("duplex", reply_ms=800, options=ReferenceOptions(max_sessions=8)) as dx,
    ):
        async with proxy_process(tmp_path, "p", head + routes(a=turn)) as p:
            await p.until_readyz(200)
            async with connect(ws_url(p.base, model="a")) as old:
                assert await mode_of(old) == "duplex_emulated"

                # B: route a moves to the duplex backend, route b is new.
                replace(p.config, head + routes(a=dx, b=turn))
                await reloads(p, "config_reloaded")
                async with connect(ws_url(p.base, model="b")) as c:
                    assert await mode_of(c) == "duplex_emulated"
                async with connect(ws_url(p.base, model="a", duplex="1")) as c:  # native
                    assert await mode_of(c) == "passthrough", "new sessions take the new route"
                body = await p.until_readyz(200)
                assert body["routes"] == {"a": "ok", "b": "ok"}, body
                async with aiohttp.ClientSession() as http:
                    async with http.get(p.base + "/v1/routes") as resp:
                        listing = await resp.json()
                assert [r["model"] for r in listing["routes"]] == ["a", "b"]

                # The session opened before keeps its route (turn-based, emulated).
                await speak(old)
                done = await old.until("response.done", timeout=30)
                assert done["response"]["status"] == "completed", done

                # An invalid file is refused, naming what check-config names.
                replace(p.config, BAD)
                await reloads(p, "config_reload_refused")
                check = await asyncio.to_thread(
                    subprocess.run,
                    [sys.executable, "-m", "proxy", "check-config", str(p.config)],
                    cwd=ROOT,
                    capture_output=True,
                    text=True,
                    check=False,
                )
                assert check.returncode == 2
                problems = [ln.strip() for ln in check.stderr.splitlines() if ln.startswith("  ")]
                assert problems
                log = p.output()
                for problem in problems:
                    assert problem in log or problem.replace('"', '\\"') in log, (problem, log)

                # B stays in force: both routes still served, the old session still talks.
                async with connect(ws_url(p.base, model="b")) as c:
                    assert await mode_of(c) == "duplex_emulated"
                async with connect(ws_url(p.base, model="a", duplex="1")) as c:
                    assert await mode_of(c) == "passthrough"
                await speak(old)
                done = await old.until("response.done", timeout=30)
                assert done["response"]["status"] == "completed", done


async def test_a_configmap_symlink_swap_reloads_without_a_signal(tmp_path: Path) -> None:
    """The kubelet's layout: ``config.toml -> ..data/config.toml``, ``..data -> ..v1``;
    an update writes ``..v2`` and swaps ``..data`` in one rename."""
    async with reference("turn", reply_ms=800) as turn:
        mount = tmp_path / "mount"
        for version, text in (("..v1", routes(a=turn)), ("..v2", routes(a=turn, b=turn))):
            (mount / version).mkdir(parents=True)
            (mount / version / "config.toml").write_text(
                "[reload]\nwatch_interval_s = 0.2\n" + text
            )
        (mount / "..data").symlink_to("..v1")
        (mount / "config.toml").symlink_to("..data/config.toml")
        async with proxy_process(tmp_path, "p", mount / "config.toml") as p:
            await p.until_readyz(200)
            async with connect(ws_url(p.base, model="b")) as c:
                await c.send({"type": "session.update", "session": {"type": "realtime"}})
                err = await c.until("error")
                assert err["error"]["code"] == "model_not_found"
            new = mount / "..data.tmp"
            new.symlink_to("..v2")
            os.replace(new, mount / "..data")
            text = await p.until_logged("config_reloaded")
            assert "file changed" in text
            async with connect(ws_url(p.base, model="b")) as c:
                assert await mode_of(c) == "duplex_emulated"
