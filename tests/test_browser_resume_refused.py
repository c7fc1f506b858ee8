"""The talk page when a resume is refused as ``session_resume_unavailable`` or as
``upstream_unavailable``: it tries again, and the session goes on (docs/protocol.md,
"Resume": both leave the session where it was).

The page talks to replica a; a goes away, and replica b takes a's port, either with the
session store frozen (Redis under SIGSTOP: b cannot load the session,
``session_resume_unavailable``) or with its way to the upstream cut (a TCP relay
pointed at a closed port: b cannot open the session's upstream, ``upstream_unavailable``).
The page names its model, so b then opens a new session on that socket, which the page
leaves. Once the store answers or the relay points at the upstream again, the page's
next try resumes the same session from the store, nothing lost and nothing repeated. A
page that took either refusal for a lost session would be talking in a new one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from proxy.app import build_app
from proxy.state import ProxyState
from tests.browser_page import CHROMIUM, WAIT_MS, chromium_args, needs_chromium, state, write_wav
from tests.ports import closed_port, free_port
from tests.redis_server import RedisServer
from tests.resume_client import wait_persisted
from tests.servers import load_clip, reference, serve_app, silence, store_config, tcp_link

pytestmark = [pytest.mark.redis, pytest.mark.slow]


@needs_chromium
@pytest.mark.timeout(240)
@pytest.mark.parametrize(
    ("fault", "code"),
    [("store", "session_resume_unavailable"), ("upstream", "upstream_unavailable")],
)
async def test_the_page_tries_a_resume_refused_for_now_again(
    redis_server: RedisServer, tmp_path: Path, fault: str, code: str
) -> None:
    from playwright.async_api import async_playwright

    clip = write_wav(tmp_path / "mic.wav", load_clip("utt00_clean.wav") + silence(3000))
    port = free_port()
    async with (
        reference("turn", reply_ms=500) as up,
        tcp_link(up) as link,
        async_playwright() as pw,
    ):
        config = store_config(link.url(up), redis_server.url, timeout_s=0.2)
        target = link.target
        browser = await pw.chromium.launch(
            executable_path=str(CHROMIUM), args=chromium_args(clip), headless=True
        )
        try:
            page = await (await browser.new_context()).new_page()
            page_errors: list[str] = []
            page.on("pageerror", lambda exc: page_errors.append(str(exc)))
            app_a = build_app(config, ProxyState(config=config, replica_id="a"))
            async with serve_app(app_a, port) as base:
                await page.goto(f"{base}/")
                await page.wait_for_selector("#route option[value=m]", state="attached")
                await page.click("#connect")
                await page.wait_for_function(
                    "talk.ready && talk.sessionId !== null && talk.lastSeq > 0", timeout=WAIT_MS
                )
                session_id = await page.evaluate("talk.sessionId")
                await wait_persisted(redis_server.url, session_id)
                if fault == "store":
                    redis_server.pause()
                else:
                    link.target = ("127.0.0.1", closed_port())
            try:
                app_b = build_app(config, ProxyState(config=config, replica_id="b"))
                async with serve_app(app_b, port):
                    await page.wait_for_function(
                        f"talk.errors.some(e => e.code === '{code}')", timeout=WAIT_MS
                    )
                    redis_server.resume()
                    link.target = target
                    await page.wait_for_function(
                        "talk.resumes.length >= 1 && talk.resumes.at(-1).ok !== null && talk.ready",
                        timeout=WAIT_MS,
                    )
                    before = await page.evaluate("talk.lastSeq")
                    await page.wait_for_function(f"talk.lastSeq > {before}", timeout=WAIT_MS)
                    s = await state(page)
                    assert await page.evaluate("talk.sessionId") == session_id, "a new session"
                    assert s["resumes"][-1]["ok"] is True, s["resumes"]
                    assert (s["lost"], s["duplicated"]) == (0, 0)
                    codes = {e.get("code") for e in s["errors"]}
                    assert codes == {code}, s["errors"]
            finally:
                redis_server.resume()
            assert not page_errors, page_errors
        finally:
            await browser.close()
