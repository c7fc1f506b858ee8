"""The page at ``GET /`` in a real browser: Debian's headless Chromium, driven by Playwright.

The microphone is Chromium's fake capture device playing a corpus clip (looped), so the
audio goes through the page's real getUserMedia -> AudioWorklet -> 24 kHz PCM16 path to
a real proxy (in process, on loopback) in front of the turn-based reference backend.
The clip loops with a short pause, so the next utterance lands on the assistant's
answer: a barge-in. Screenshots go to the test's tmp dir; set WEB_SCREENSHOT_DIR to
also keep the last one (that is how ``docs/talk-page.png`` is made).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from proxy.web import add_web_routes
from tests.browser_page import CHROMIUM, WAIT_MS, chromium_args, needs_chromium, state, write_wav
from tests.servers import load_clip, proxy, proxy_config, serve_app, silence

ROUTES = {
    "demo": "embedded://turn",
    "relay": "embedded://duplex-no-barge-in",
    "native": "embedded://duplex",
}


@pytest.fixture
async def base() -> AsyncIterator[str]:
    async with proxy(proxy_config(ROUTES)) as url:
        yield url


async def test_routes_endpoint_names_models_not_upstreams(base: str) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{base}/v1/routes") as resp:
            assert resp.status == 200
            text = await resp.text()
        async with http.get(f"{base}/") as resp:
            assert resp.status == 200
            assert "duplex-proxy" in await resp.text()
        for name in (
            "app.js",
            "session.js",
            "events.js",
            "capture-worklet.js",
            "playback-worklet.js",
        ):
            async with http.get(f"{base}/web/{name}") as resp:
                assert resp.status == 200
                assert resp.content_type == "text/javascript"
        async with http.get(f"{base}/web/..%2Froutes.py") as resp:
            assert resp.status == 404
    body = json.loads(text)
    assert [r["model"] for r in body["routes"]] == ["demo", "relay", "native"]
    assert "embedded" not in text and "ws://" not in text


async def test_page_can_be_turned_off() -> None:
    app = web.Application()
    add_web_routes(app, proxy_config(ROUTES), enabled=False)
    async with serve_app(app) as url, aiohttp.ClientSession() as http:
        for path in ("/", "/v1/routes", "/web/app.js"):
            async with http.get(url + path) as resp:
                assert resp.status == 404


@needs_chromium
@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize(
    ("model", "mode", "echo_cancellation"),
    [
        ("demo", "duplex_emulated", True),
        ("relay", "barge_in_emulated", False),
        ("native", "barge_in_emulated", True),  # a GA client: the proxy decides barge-in
    ],
)
async def test_talk_in_the_browser(
    base: str, tmp_path: Path, model: str, mode: str, echo_cancellation: bool
) -> None:
    from playwright.async_api import async_playwright

    # The utterance, then a pause: looped by the fake device, the next utterance
    # starts while the answer to the previous one plays.
    clip = write_wav(tmp_path / "mic.wav", load_clip("utt00_clean.wav") + silence(1200))
    shots = tmp_path / "screenshots"
    shots.mkdir()
    page_errors: list[str] = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=str(CHROMIUM), args=chromium_args(clip), headless=True
        )
        try:
            context = await browser.new_context(viewport={"width": 1280, "height": 860})
            page = await context.new_page()
            page.on("pageerror", lambda exc: page_errors.append(str(exc)))
            await page.goto(f"{base}/")
            await page.wait_for_selector("#route option[value=relay]", state="attached")
            assert await page.input_value("#model") == "demo"  # the first route
            await page.select_option("#route", model)
            assert await page.input_value("#model") == model
            if not echo_cancellation:
                await page.uncheck("#aec")
            await page.click("#connect")

            await page.wait_for_function("talk.mode !== null", timeout=WAIT_MS)
            assert mode in await page.inner_text("#mode")
            assert await page.locator("#caps [data-cap=supports_barge_in].on").count() == 1
            aec = await page.evaluate("talk.capture.settings.echoCancellation")
            assert aec is echo_cancellation
            if model == "relay":  # the upstream's own word: it cannot barge in
                assert await page.locator("#upcaps [data-cap=supports_barge_in].no").count() == 1
            await page.screenshot(path=shots / "1-connected.png")

            # The fake microphone's speech reached the proxy's VAD; the answer played.
            await page.wait_for_function("talk.speechStarted >= 1", timeout=WAIT_MS)
            await page.wait_for_function("talk.playedMs >= 500", timeout=WAIT_MS)
            # The next loop of the clip talks over the answer: a barge-in and a truncation.
            await page.wait_for_function("talk.bargeIns.length >= 1", timeout=WAIT_MS)
            await page.locator("#log li.barge-in").first.wait_for()
            if mode != "passthrough":  # the proxy cuts: a truncation where the page said
                await page.wait_for_function("talk.truncations.length >= 1", timeout=WAIT_MS)
                await page.locator("#log li.truncated").first.wait_for()
            s = await state(page)
            for cut in s["truncations"]:
                # The cut is where this page said playback was (its playback.ack), never beyond.
                assert cut["audio_end_ms"] <= s["played"][cut["item_id"]]
            await page.screenshot(path=shots / "2-barge-in.png")

            # Drop the socket mid-session and resume on a new one: nothing lost.
            before = s["lastSeq"]
            await page.click("#drop")
            await page.wait_for_function(
                "talk.resumes.length >= 1 && talk.resumes[0].ok !== null", timeout=WAIT_MS
            )
            await page.wait_for_function(f"talk.lastSeq > {before + 20}", timeout=WAIT_MS)
            s = await state(page)
            assert s["resumes"][0]["ok"] is True, s["resumes"]
            assert s["resumes"][0]["afterSeq"] >= before
            assert (s["lost"], s["duplicated"]) == (0, 0)
            assert await page.locator("#log li.resume").count() >= 3
            await page.screenshot(path=shots / "3-resumed.png", full_page=True)
            assert not s["errors"], s["errors"]

            # A socket that closes unasked is resumed by the page on its own.
            await page.evaluate("talk.ws.close(4001, 'closed unasked')")
            await page.wait_for_function(
                "talk.resumes.length >= 2 && talk.resumes[1].ok !== null", timeout=WAIT_MS
            )
            s = await state(page)
            assert s["resumes"][1]["ok"] is True, s["resumes"]
            assert (s["lost"], s["duplicated"]) == (0, 0)

            # Hang up (session.close) and talk again: a new session, counted afresh.
            first_session = await page.evaluate("talk.sessionId")
            await page.click("#hangup")
            await page.wait_for_function("talk.sessionId === null && !talk.ready")
            await page.click("#connect")
            await page.wait_for_function(
                f"talk.sessionId !== null && talk.sessionId !== {first_session!r}"
                " && talk.lastSeq > 0",
                timeout=WAIT_MS,
            )
            s = await state(page)
            assert (s["lost"], s["duplicated"], s["resumes"]) == (0, 0, [])
            assert not page_errors, page_errors
        finally:
            await browser.close()
    if (keep := os.environ.get("WEB_SCREENSHOT_DIR")) and model == "demo":
        shutil.copy(shots / "3-resumed.png", Path(keep) / "talk-page.png")
