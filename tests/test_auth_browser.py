"""The talk page with API keys, in Debian's headless Chromium: it asks for a key and
connects with it as a WebSocket subprotocol (browsers cannot set headers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.auth_helpers import KEY_A, api_keys, auth_config
from tests.browser_page import CHROMIUM, WAIT_MS, chromium_args, needs_chromium, write_wav
from tests.servers import load_clip, proxy, silence


@needs_chromium
@pytest.mark.slow
@pytest.mark.timeout(180)
async def test_the_page_asks_for_a_key_and_connects_with_it(tmp_path: Path) -> None:
    from playwright.async_api import async_playwright

    clip = write_wav(tmp_path / "mic.wav", load_clip("utt00_clean.wav") + silence(1200))
    config = auth_config({"demo": "embedded://turn"}, api_keys(), web={"enabled": True})
    async with proxy(config) as base, async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=str(CHROMIUM), args=chromium_args(clip), headless=True
        )
        try:
            page = await browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            await page.goto(f"{base}/")
            await page.wait_for_selector("#key-label:not([hidden])")
            # No key: the page says so and opens nothing.
            await page.click("#connect")
            await page.locator("#log li.error", has_text="API key").wait_for()
            assert await page.evaluate("talk.ws") is None
            # A wrong key: the upgrade is refused (401) and no session starts.
            await page.fill("#key", "dpk_wrong-key")
            await page.click("#connect")
            await page.locator("#log li.error", has_text="socket.closed").wait_for()
            assert await page.evaluate("talk.sessionId") is None
            await page.click("#hangup")
            # The right key: the proxy selects "realtime" and the session opens.
            await page.fill("#key", KEY_A)
            await page.click("#connect")
            await page.wait_for_function("talk.mode !== null", timeout=WAIT_MS)
            assert await page.evaluate("talk.ws.protocol") == "realtime"
            # Dropping the socket resumes on a new one, with the key again.
            await page.wait_for_function("talk.lastSeq >= 3", timeout=WAIT_MS)
            await page.click("#drop")
            await page.wait_for_function(
                "talk.resumes.length >= 1 && talk.resumes[0].ok !== null", timeout=WAIT_MS
            )
            assert await page.evaluate("talk.resumes[0].ok") is True
            assert not errors, errors
        finally:
            await browser.close()
